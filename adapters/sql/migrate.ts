import { Effect, Layer } from "effect"
import { Migrator } from "effect/sql"
import initial from "./migrations/0001_initial.js"
import webhookDeliveries from "./migrations/0002_webhook_deliveries.js"
import uploads from "./migrations/0003_uploads.js"
import uploadVerification from "./migrations/0004_upload_verification.js"
import queue from "./migrations/0005_queue.js"
import retention from "./migrations/0006_retention.js"
import providerHandles from "./migrations/0007_provider_handles.js"
import admin from "./migrations/0008_admin.js"
import providerLimits from "./migrations/0009_provider_limits.js"
import activeJobs from "./migrations/0010_active_jobs.js"
import authFailures from "./migrations/0011_auth_failures.js"
import budgetsAndSpend from "./migrations/0012_budgets_and_spend.js"
import providerRoute from "./migrations/0013_provider_route.js"
import listIndexes from "./migrations/0014_list_indexes.js"
import changeSignals from "./migrations/0015_change_signals.js"
import submitGate from "./migrations/0016_submit_gate.js"
import fairShares from "./migrations/0017_fair_shares.js"
import jobLogs from "./migrations/0018_job_logs.js"
import changes from "./migrations/0019_changes.js"
import standardWebhooks from "./migrations/0020_standard_webhooks.js"
import submitCountsItself from "./migrations/0021_submit_counts_itself.js"
import processingVersion from "./migrations/0022_processing_version.js"
import webhookClaims from "./migrations/0023_webhook_claims.js"
import webhookClaimKeys from "./migrations/0024_webhook_claim_keys.js"
import spendDaily from "./migrations/0025_spend_daily.js"
import leaseOrder from "./migrations/0026_lease_order.js"
import webhookRetriesWaiting from "./migrations/0027_webhook_retries_waiting.js"
import { migrationsTable, SqlTables } from "./tables.js"
import { upgradeUnprefixed } from "./upgrade.js"

/**
 * Effect SQL's Migrator without schema dumps, so neither dialect needs pg_dump or the
 * sqlite3 binary. It records applied migrations in `<prefix>migrations`, not in the shared
 * `effect_sql_migrations`: the migrator runs only ids above the latest recorded, so sharing a
 * host's table would make the host's migrations and the engine's skip each other.
 */
const run = Migrator.make({})

/** Moves a database of the unprefixed release to the prefixed names first, then migrates. */
const migrate = Effect.gen(function*() {
  const t = yield* SqlTables
  yield* upgradeUnprefixed
  return yield* run({
    table: migrationsTable(t.prefix),
    loader: Migrator.fromRecord({
      "0001_initial": initial(t),
      "0002_webhook_deliveries": webhookDeliveries(t),
      "0003_uploads": uploads(t),
      "0004_upload_verification": uploadVerification(t),
      "0005_queue": queue(t),
      "0006_retention": retention(t),
      "0007_provider_handles": providerHandles(t),
      "0008_admin": admin(t),
      "0009_provider_limits": providerLimits(t),
      "0010_active_jobs": activeJobs(t),
      "0011_auth_failures": authFailures(t),
      "0012_budgets_and_spend": budgetsAndSpend(t),
      "0013_provider_route": providerRoute(t),
      "0014_list_indexes": listIndexes(t),
      "0015_change_signals": changeSignals(t),
      "0016_submit_gate": submitGate(t),
      "0017_fair_shares": fairShares(t),
      "0018_job_logs": jobLogs(t),
      "0019_changes": changes(t),
      "0020_standard_webhooks": standardWebhooks(t),
      "0021_submit_counts_itself": submitCountsItself(t),
      "0022_processing_version": processingVersion(t),
      "0023_webhook_claims": webhookClaims(t),
      "0024_webhook_claim_keys": webhookClaimKeys(t),
      "0025_spend_daily": spendDaily(t),
      "0026_lease_order": leaseOrder(t),
      "0027_webhook_retries_waiting": webhookRetriesWaiting(t)
    })
  })
})

export const layerMigrations = Layer.effectDiscard(migrate)
