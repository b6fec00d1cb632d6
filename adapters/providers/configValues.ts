import { Config, Effect, Option, Redacted, Schema, SchemaIssue } from "effect"
import type { GenerationProvider } from "../../src/ports/Provider.js"

/** The error of a setting that is set to a value that cannot work; the value stays out of it (it may be a secret). */
export const invalidConfig = (message: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.InvalidValue({ message })))

/** A set value that cannot work is an error (with `message`), never the default nor "not configured". */
const validate = <A>(message: string, valid: (value: A) => boolean) => (config: Config.Config<A>): Config.Config<A> =>
  Config.mapEffect(config, (value) => valid(value) ? Effect.succeed(value) : Effect.fail(invalidConfig(message)))

/** A credential from the environment: missing means "provider not configured"; set but empty is a mistake. */
export const secretConfig = (name: string): Config.Config<Redacted.Redacted<string>> =>
  Config.Redacted(name).pipe(validate(`${name} is set but empty`, (value) => Redacted.value(value).trim().length > 0))

/** An http(s) address from the environment, or the provider's own. */
export const baseUrlConfig = (name: string, fallback: string): Config.Config<string> =>
  Config.String(name).pipe(
    Config.withDefault(fallback),
    validate(`${name} must be an http(s) URL`, (value) => /^https?:\/\/[^\s]+$/.test(value))
  )

/** A number of milliseconds from the environment, or the adapter's default. */
export const millisConfig = (name: string, fallback: number): Config.Config<number> =>
  Config.Int(name).pipe(
    Config.withDefault(fallback),
    validate(`${name} must be a positive number of milliseconds`, (value) => value > 0)
  )

/** A positive whole number from the environment (a count), or the adapter's default. */
export const countConfig = (name: string, fallback: number): Config.Config<number> =>
  Config.Int(name).pipe(
    Config.withDefault(fallback),
    validate(`${name} must be a positive whole number`, (value) => value > 0)
  )

/** A setting that may be absent, as an options field that is then left out. */
export const optionalConfig = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.map(Config.option(config), Option.getOrUndefined)

/**
 * The provider built from `config` when its credential variable is set, else none: the bundled
 * server registers a provider only then. Once the credential is set, any setting that is wrong
 * is an error rather than a provider quietly left out.
 */
export const providerFromConfig = <A>(
  credential: string,
  config: Config.Config<A>,
  make: (options: A) => GenerationProvider
): Effect.Effect<Option.Option<GenerationProvider>, Config.ConfigError> =>
  Effect.gen(function*() {
    if (Option.isNone(yield* Config.option(Config.String(credential)))) return Option.none()
    return Option.some(make(yield* config))
  })
