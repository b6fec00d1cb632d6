import { Config, Option } from "effect"
import { baseUrlConfig, secretConfig } from "../shared/configValues.js"
import { RUNWAY_API_VERSION, RUNWAY_BASE_URL, type RunwayProviderOptions } from "./RunwayProvider.js"

/**
 * The Runway provider's settings from the environment, as Runway's own SDKs read them:
 * RUNWAYML_API_SECRET (none: the provider is not configured), RUNWAYML_BASE_URL, and
 * RUNWAY_API_VERSION for the X-Runway-Version header.
 */
export const runwayProviderConfig: Config.Config<Option.Option<RunwayProviderOptions>> = Config.option(
  Config.all({
    apiSecret: secretConfig("RUNWAYML_API_SECRET"),
    baseUrl: baseUrlConfig("RUNWAYML_BASE_URL", RUNWAY_BASE_URL),
    apiVersion: Config.string("RUNWAY_API_VERSION").pipe(Config.withDefault(RUNWAY_API_VERSION))
  })
)
