import * as Command from "@effect/cli/Command"
import { Effect, Layer, Option, Redacted } from "effect"
import type { EngineEnvSettings } from "genjobs"
import { join } from "node:path"
import { connection } from "./client.js"
import { CliError } from "./errors.js"
import { emit, progress, report } from "./output.js"

/** The bundled server's module: `genjobs serve` runs it in this very process, as `npm start` does. */
export const SERVER_MODULE = "../server/main.js"

/**
 * `genjobs serve` on its own never reaches here: main.ts hands the process to the server before
 * the CLI starts, so signals reach the server alone. Anything after `serve` lands here.
 */
export const serve = Command.make("serve", {}, () =>
  report(false)(
    new CliError({
      code: "USAGE",
      message: "serve takes no arguments: configure the server with environment variables (PORT, DATA_DIR, ADMIN_TOKEN, ...; docs/configuration.md)"
    })
  )).pipe(Command.withDescription("Start the bundled server, as npm start does (configured by environment variables)"))

/** Where the store lives, without credentials. */
const describeDatabase = (settings: EngineEnvSettings) =>
  Option.match(settings.databaseUrl, {
    onNone: () => `SQLite ${join(settings.dataDir, "genjobs.db")}`,
    onSome: (url) => {
      const parsed = new URL(Redacted.value(url))
      return `PostgreSQL ${parsed.host}${parsed.pathname}`
    }
  })

export const migrate = Command.make("migrate", { json: connection.json }, (o) =>
  Effect.gen(function*() {
    const { EngineEnv } = yield* Effect.promise(() => import("genjobs"))
    const settings = yield* Effect.mapError(EngineEnv, (e) => new CliError({ code: "CONFIG_ERROR", message: String(e) }))
    const tablePrefix = Option.getOrUndefined(settings.tablePrefix)
    const where = describeDatabase(settings)
    const stores = yield* Option.match(settings.databaseUrl, {
      onNone: () =>
        Effect.promise(() => import("genjobs/sqlite")).pipe(
          Effect.map(({ layerSqlite }) => layerSqlite({ filename: join(settings.dataDir, "genjobs.db"), tablePrefix }) as Layer.Layer<unknown, unknown>)
        ),
      onSome: (url) =>
        /^postgres(ql)?:\/\//.test(Redacted.value(url))
          ? Effect.promise(() => import("genjobs/postgres")).pipe(
            Effect.map(({ layerPostgres }) => layerPostgres({ url, tablePrefix }) as Layer.Layer<unknown, unknown>)
          )
          : Effect.fail(new CliError({ code: "CONFIG_ERROR", message: "DATABASE_URL must be a postgres:// URL; leave it unset for SQLite" }))
    })
    yield* progress(o.json, `Migrating ${where} …`)
    // Opening the stores runs the migrations (and the move of an unprefixed database); closing ends the connections.
    yield* Effect.scoped(Layer.build(stores)).pipe(
      Effect.mapError((e) => new CliError({ code: "MIGRATION_FAILED", message: `${where}: ${e instanceof Error ? e.message : String(e)}` }))
    )
    yield* emit(o.json, { migrated: true, database: where }, () => `${where} is up to date`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(
    Command.withDescription("Run the store migrations for DATABASE_URL (or SQLite in DATA_DIR) and exit")
  )
