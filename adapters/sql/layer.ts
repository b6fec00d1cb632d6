import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Layer, type Redacted } from "effect"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { UploadRepo } from "../../src/ports/UploadRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { makeJobRepo } from "../../src/services/jobRepoRules.js"
import { layerMigrations } from "./migrate.js"
import { makeSqlAccounts } from "./SqlAccounts.js"
import { makeSqlCatalog } from "./SqlCatalog.js"
import { makeSqlJobDriver } from "./SqlJobs.js"
import { makeSqlUploads } from "./SqlUploads.js"
import { makeSqlWebhooks } from "./SqlWebhooks.js"

/** The store ports over whatever SqlClient is provided (SQLite or PostgreSQL). */
export const layerSqlStores = Layer.unwrapEffect(
  Effect.gen(function*() {
    const { accounts, keys } = yield* makeSqlAccounts
    return Layer.mergeAll(
      Layer.succeed(AccountRepo, accounts),
      Layer.succeed(ApiKeyRepo, keys),
      Layer.succeed(JobRepo, makeJobRepo(yield* makeSqlJobDriver)),
      Layer.succeed(CatalogRepo, yield* makeSqlCatalog),
      Layer.succeed(WebhookDeliveryRepo, yield* makeSqlWebhooks),
      Layer.succeed(UploadRepo, yield* makeSqlUploads)
    )
  })
)

const storesWithMigrations = layerSqlStores.pipe(Layer.provide(layerMigrations))

/** SQLite file in WAL mode (the client's default), created with its directory when missing. */
export const layerSqlite = (options: { readonly filename: string }) =>
  storesWithMigrations.pipe(
    Layer.provide(
      Layer.unwrapEffect(
        Effect.sync(() => {
          if (options.filename !== ":memory:") mkdirSync(dirname(options.filename), { recursive: true })
          return SqliteClient.layer({ filename: options.filename })
        })
      )
    )
  )

export const layerPostgres = (options: { readonly url: Redacted.Redacted<string> }) =>
  storesWithMigrations.pipe(Layer.provide(PgClient.layer({ url: options.url })))
