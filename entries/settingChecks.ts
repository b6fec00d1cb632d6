import { Config, Effect, Schema, SchemaIssue } from "effect"

/** A setting the environment got wrong: start-up stops with `message`, which names the variable and its rule. */
export const invalidSetting = (message: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.InvalidValue({ message })))

/** A setting refused with its own message when `ok` does not hold. */
export const satisfying = <A>(message: string, ok: (value: A) => boolean) =>
  Config.mapEffect((value: A) => ok(value) ? Effect.succeed(value) : Effect.fail(invalidSetting(message)))

/** What a refused setting says, for a start-up line: its reason alone (a ConfigError's message wraps it in the cause's name). */
export const settingRefusalText = (error: Config.ConfigError): string => error.cause.message
