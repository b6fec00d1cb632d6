import { Migrator } from "@effect/sql"
import { Layer } from "effect"
import initial from "./migrations/0001_initial.js"
import webhookDeliveries from "./migrations/0002_webhook_deliveries.js"
import uploads from "./migrations/0003_uploads.js"
import uploadVerification from "./migrations/0004_upload_verification.js"

/**
 * @effect/sql's migrator without schema dumps, so neither dialect needs pg_dump or the
 * sqlite3 binary. It records applied migrations in `effect_sql_migrations`.
 */
const run = Migrator.make({})

export const layerMigrations = Layer.effectDiscard(
  run({
    loader: Migrator.fromRecord({
      "0001_initial": initial,
      "0002_webhook_deliveries": webhookDeliveries,
      "0003_uploads": uploads,
      "0004_upload_verification": uploadVerification
    })
  })
)
