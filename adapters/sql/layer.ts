import { Effect, Layer, Option } from "effect"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { AccountSettingsRepo } from "../../src/ports/AccountSettingsRepo.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { AuditLog } from "../../src/ports/AuditLog.js"
import { AuthFailures } from "../../src/ports/AuthFailures.js"
import { ChangeFeed } from "../../src/ports/ChangeFeed.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { JobLogRepo } from "../../src/ports/JobLogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { RetentionRepo } from "../../src/ports/RetentionRepo.js"
import { UploadRepo } from "../../src/ports/UploadRepo.js"
import { makeStoreChanges, StoreChanges } from "../../src/ports/StoreChanges.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { makeJobRepo } from "../../src/services/jobRepoRules.js"
import { announcingChanges } from "./changeWrites.js"
import { layerMigrations } from "./migrate.js"
import { makeSqlAccounts } from "./SqlAccounts.js"
import { makeSqlAdmin } from "./SqlAdmin.js"
import { makeSqlAuditLog } from "./SqlAuditLog.js"
import { makeSqlAuthFailures } from "./SqlAuthFailures.js"
import { makeSqlCatalog } from "./SqlCatalog.js"
import { makeSqlChangeFeed } from "./SqlChanges.js"
import { makeSqlJobDriver, type SqlJobDriverOptions } from "./SqlJobs.js"
import { makeSqlRetention } from "./SqlRetention.js"
import { makeSqlJobLogs } from "./SqlJobLogs.js"
import { layerSqlStoreStats } from "./SqlStoreStats.js"
import { makeSqlUploads } from "./SqlUploads.js"
import { makeSqlWebhooks } from "./SqlWebhooks.js"
import { layerSqlTables } from "./tables.js"

export interface SqlStoreOptions extends SqlJobDriverOptions {
  /** Starts the name of every table, index and constraint the engine makes; "genjobs_" by default. */
  readonly tablePrefix?: string | undefined
}

/**
 * How long a process trusts its cached keys, accounts and catalog when no store signal can tell
 * it of another process's change (SQLite, or a host's own PostgreSQL client without
 * PgStoreChanges): this process's own changes reach its caches at once.
 */
export const UNSIGNALLED_CACHE_MAX_AGE_MS = 1_000

// Scoped: the job rules' write batchers run in the layer's scope and stop when it closes.
const stores = (options: SqlJobDriverOptions) => Layer.unwrap(
  Effect.gen(function*() {
    const { accounts, keys } = yield* makeSqlAccounts
    const admin = yield* makeSqlAdmin
    // PostgreSQL's store layers provide the changes LISTEN hears; otherwise only this process's are known.
    const changes = Option.getOrElse(yield* Effect.serviceOption(StoreChanges), () => makeStoreChanges(UNSIGNALLED_CACHE_MAX_AGE_MS))
    const announced = announcingChanges(changes, { accounts, keys, settings: admin.settings, catalog: yield* makeSqlCatalog })
    return Layer.mergeAll(
      Layer.succeed(StoreChanges, changes),
      Layer.succeed(AccountRepo, announced.accounts),
      Layer.succeed(ApiKeyRepo, announced.keys),
      Layer.succeed(JobRepo, yield* makeJobRepo(yield* makeSqlJobDriver(options))),
      Layer.succeed(CatalogRepo, announced.catalog),
      Layer.succeed(WebhookDeliveryRepo, yield* makeSqlWebhooks),
      Layer.succeed(UploadRepo, yield* makeSqlUploads),
      Layer.succeed(RetentionRepo, yield* makeSqlRetention),
      Layer.succeed(JobLogRepo, yield* makeSqlJobLogs),
      Layer.succeed(AdminReadRepo, admin.reads),
      Layer.succeed(AccountSettingsRepo, announced.settings),
      Layer.succeed(AuditLog, yield* makeSqlAuditLog),
      Layer.succeed(AuthFailures, yield* makeSqlAuthFailures),
      Layer.succeed(ChangeFeed, yield* makeSqlChangeFeed)
    )
  })
)

/**
 * The store ports over whatever SqlClient is provided (SQLite or PostgreSQL): a host can pass
 * its own pool. This file imports no driver: the SQLite and PostgreSQL layers (sqlite.ts, postgres.ts)
 * each bring their own, so an app installs only the driver of the store it uses. Migrates first, moving a database of the unprefixed release to the prefix.
 * Fails with TablePrefixError on an invalid prefix. The migrations and the stats are values
 * shared by every store: fresh, so that Effect 4's layer memoization, shared across nested
 * provides, never hands one database's migrations or stats to another's stores.
 */
export const layerSqlStores = (options: SqlStoreOptions = {}) =>
  Layer.merge(stores(options), Layer.fresh(layerSqlStoreStats)).pipe(
    Layer.provide(Layer.fresh(layerMigrations)),
    Layer.provide(layerSqlTables(options.tablePrefix))
  )
