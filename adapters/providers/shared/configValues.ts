import { Config, Redacted } from "effect"

/** A credential from the environment: missing means "provider not configured"; set but empty is a mistake. */
export const secretConfig = (name: string): Config.Config<Redacted.Redacted<string>> =>
  Config.redacted(name).pipe(
    Config.validate({ message: `${name} is set but empty`, validation: (value) => Redacted.value(value).trim().length > 0 })
  )

/** An http(s) address from the environment, or the provider's own. */
export const baseUrlConfig = (name: string, fallback: string): Config.Config<string> =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be an http(s) URL`, validation: (value) => /^https?:\/\/[^\s]+$/.test(value) })
  )
