import { Config, Option } from "effect"
import { EngineEnv, satisfying } from "genjobs"
import { ObservabilityEnv } from "genjobs/observability"

/** The bundled server's settings: the engine's (EngineEnv), logs and traces (ObservabilityEnv) and its own. */
export const ServerConfig = Config.all({
  engine: EngineEnv,
  port: Config.Int("PORT").pipe(
    Config.withDefault(3000),
    satisfying("PORT must be a whole number from 0 to 65535", (n) => n >= 0 && n <= 65535)
  ),
  host: Config.String("HOST").pipe(Config.withDefault("127.0.0.1")),
  catalogFile: Config.option(Config.String("CATALOG_FILE")),
  // Unset: on for the embedded SQLite store (a first try), off for PostgreSQL (a deployment); see seedDemoOf.
  seedDemo: Config.option(Config.Boolean("SEED_DEMO")),
  // A client that opened a connection and sends its headers slower than this is cut off (Node's headersTimeout).
  headersTimeoutMs: Config.Int("HEADERS_TIMEOUT_MS").pipe(
    Config.withDefault(10_000),
    satisfying("HEADERS_TIMEOUT_MS must be a whole number of at least 100", (n) => n >= 100)
  ),
  observability: ObservabilityEnv
})

export type ServerSettings = Config.Success<typeof ServerConfig>

/** The URL clients reach the server at; file URLs are built on it. */
export const publicUrlOf = (settings: ServerSettings): string =>
  Option.getOrElse(settings.engine.publicUrl, () => {
    const host = settings.host === "0.0.0.0" || settings.host === "::" ? "localhost" : settings.host
    return `http://${host.includes(":") ? `[${host}]` : host}:${settings.port}`
  }).replace(/\/$/, "")

/**
 * Whether an empty store gets the demo catalog and a demo account whose key is printed:
 * SEED_DEMO when set, else only on the embedded SQLite default. A PostgreSQL database is
 * usually a deployment's, where a $100 account with a full-scope key is a hole, not a welcome.
 */
export const seedDemoOf = (settings: ServerSettings): boolean =>
  Option.getOrElse(settings.seedDemo, () => Option.isNone(settings.engine.databaseUrl))
