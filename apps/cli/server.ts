import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { EngineEnvSettings } from "genjobs"
import { join } from "node:path"
import type { Input } from "./commandLine.js"
import type { json } from "./commands.js"
import { CliError } from "./errors.js"
import { emit, progress, report } from "./output.js"

/** Where the store lives, without credentials. */
const describeDatabase = (settings: EngineEnvSettings) =>
  Option.match(settings.databaseUrl, {
    onNone: () => `SQLite ${join(settings.dataDir, "genjobs.db")}`,
    onSome: (url) => {
      const parsed = new URL(Redacted.value(url))
      return `PostgreSQL ${parsed.host}${parsed.pathname}`
    }
  })

/** A store's entry; its drivers are optional packages of genjobs, and the error says how to install them. */
const storeEntry = <M>(entry: "genjobs/sqlite" | "genjobs/postgres", chosen: string) =>
  Effect.flatMap(Effect.promise(() => import("genjobs")), ({ loadOptionalEntry }) =>
    Effect.mapError(loadOptionalEntry<M>(entry, chosen), (e) => new CliError({ code: "CONFIG_ERROR", message: e.message })))

export const migrate = ({ options: o }: Input<typeof json>) =>
  Effect.gen(function*() {
    const { EngineEnv } = yield* Effect.promise(() => import("genjobs"))
    const settings = yield* Effect.mapError(EngineEnv, (e) => new CliError({ code: "CONFIG_ERROR", message: String(e) }))
    const tablePrefix = Option.getOrUndefined(settings.tablePrefix)
    const where = describeDatabase(settings)
    const stores = yield* Option.match(settings.databaseUrl, {
      onNone: () =>
        storeEntry<typeof import("genjobs/sqlite")>("genjobs/sqlite", "DATABASE_URL is unset, so the store is SQLite").pipe(
          Effect.map(({ layerSqlite }) => layerSqlite({ filename: join(settings.dataDir, "genjobs.db"), tablePrefix }) as Layer.Layer<unknown, unknown>)
        ),
      onSome: (url) =>
        /^postgres(ql)?:\/\//.test(Redacted.value(url))
          ? storeEntry<typeof import("genjobs/postgres")>("genjobs/postgres", "DATABASE_URL names PostgreSQL").pipe(
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
  }).pipe(Effect.catchTag("CliError", report(o.json)))
