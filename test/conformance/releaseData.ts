import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Account, ApiKey, LedgerEntry } from "../../src/domain/account.js"
import type { AccountId, ApiKeyId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { UPLOAD_LIFETIME_MS, UPLOAD_URL_TTL_MS, type Upload } from "../../src/domain/upload.js"
import type { WebhookDelivery } from "../../src/domain/webhook.js"
import { account, job, sampleCatalog, T0 } from "./fixtures.js"

/**
 * What a database of the unprefixed release holds, as the engine must read it back after the
 * upgrade, and the rows written into the release's tables (createReleaseSchema) to hold it.
 */
const HOOK = "https://hooks.example/genjobs"
const alice = account({
  id: "acc_release_alice" as AccountId,
  name: "Alice",
  balanceMicroCents: 7_000,
  segments: ["pro"],
  discounts: [{ type: "vip", percentage: 10 }],
  webhookSecret: "whsec_new",
  previousWebhookSecret: "whsec_old",
  previousWebhookSecretExpiresAt: T0 + 60_000
})
const bob = account({ id: "acc_release_bob" as AccountId, name: "Bob", balanceMicroCents: 500 })

// Newest first, as listed: pending, processing (leased), completed (outputs), failed (refunded).
// A job waiting across the upgrade keeps its place: migration 0017 keys it by its creation.
const pending = job(alice.id, { createdAt: T0 + 4_000, webhookUrl: HOOK, fairKey: T0 + 4_000 })
const processing = job(alice.id, {
  createdAt: T0 + 3_000, status: "processing", startedAt: T0 + 3_100, attempts: 1,
  leaseOwner: "worker-release", leaseExpiresAt: T0 + 3_600_000
})
const completed = job(alice.id, {
  createdAt: T0 + 2_000, status: "completed", startedAt: T0 + 2_100, completedAt: T0 + 2_500, attempts: 1, webhookUrl: HOOK,
  outputs: [{ url: "https://files.example/out.png", type: "image", metadata: { width: 512 } }]
})
const failed = job(alice.id, {
  createdAt: T0 + 1_000, status: "failed", startedAt: T0 + 1_100, completedAt: T0 + 1_500, attempts: 1, webhookUrl: HOOK,
  // The release stored no failure type (issue 38): its error reads back as `internal`, not retryable.
  error: { code: "GENERATION_FAILED", message: "the provider refused", type: "internal", retryable: false }
})

const ledgerLine = (id: string, accountId: AccountId, jobId: string | null, kind: LedgerEntry["kind"], amountMicroCents: number, createdAt: number): LedgerEntry =>
  ({ id, accountId, jobId, kind, amountMicroCents, createdAt })

const deliveries: ReadonlyArray<WebhookDelivery> = [
  {
    id: "whd_release_sent", jobId: completed.id, accountId: alice.id, url: HOOK, payload: "{\"jobId\":\"sent\"}", status: "sent",
    attempts: [{ attempt: 1, at: T0 + 2_600, statusCode: 200, error: null, durationMs: 12, responseBody: "ok" }],
    nextAttemptAt: null, leaseOwner: null, leaseExpiresAt: null, createdAt: T0 + 2_500
  },
  {
    id: "whd_release_failed", jobId: failed.id, accountId: alice.id, url: HOOK, payload: "{\"jobId\":\"failed\"}", status: "failed",
    attempts: [{ attempt: 1, at: T0 + 1_600, statusCode: 500, error: null, durationMs: 30, responseBody: "down" }],
    nextAttemptAt: null, leaseOwner: null, leaseExpiresAt: null, createdAt: T0 + 1_500
  }
]

const upload = (id: string, overrides: Partial<Upload>): Upload => ({
  id, accountId: alice.id, filename: "cat.png", contentType: "image/png", status: "pending", size: null, verifiedAt: null,
  createdAt: T0, uploadUrlExpiresAt: T0 + UPLOAD_URL_TTL_MS, expiresAt: T0 + UPLOAD_LIFETIME_MS, leaseOwner: null, leaseExpiresAt: null,
  ...overrides
})

export const release = {
  alice,
  bob,
  jobs: { pending, processing, completed, failed },
  ledger: {
    alice: [
      ledgerLine("led_1", alice.id, null, "credit", 10_000, T0),
      ledgerLine("led_2", alice.id, failed.id, "charge", -1_000, failed.createdAt),
      ledgerLine("led_3", alice.id, failed.id, "refund", 1_000, failed.completedAt!),
      ledgerLine("led_4", alice.id, completed.id, "charge", -1_000, completed.createdAt),
      ledgerLine("led_5", alice.id, processing.id, "charge", -1_000, processing.createdAt),
      ledgerLine("led_6", alice.id, pending.id, "charge", -1_000, pending.createdAt)
    ],
    bob: [ledgerLine("led_7", bob.id, null, "credit", 500, T0)]
  },
  keys: [
    {
      id: "key_release_alice" as ApiKeyId, accountId: alice.id, name: "prod", scopes: ["submit_job", "check_status"], allowedIPs: ["10.0.0.0/8"],
      hash: "a".repeat(64), hint: "gjk_aaaa", active: true, expiresAt: null, createdAt: T0
    },
    {
      id: "key_release_bob" as ApiKeyId, accountId: bob.id, name: "old", scopes: ["check_status"], allowedIPs: [],
      hash: "b".repeat(64), hint: "gjk_bbbb", active: false, expiresAt: T0 + 1_000, createdAt: T0
    }
  ] satisfies ReadonlyArray<ApiKey>,
  catalog: { document: sampleCatalog(), revision: 3 },
  /** The pending job was submitted with this key. */
  idempotency: { key: "idem-release", requestHash: "hash-release", jobId: pending.id },
  deliveries,
  uploads: [
    upload("upl_release_verified", { size: 1_234, verifiedAt: T0 + UPLOAD_URL_TTL_MS + 5_000 }),
    upload("upl_release_expired", { status: "expired", filename: "old.mp4", contentType: "video/mp4" })
  ]
}

const json = (value: unknown) => (value === null ? null : JSON.stringify(value))

const accountRow = (a: Account) => ({
  id: a.id, name: a.name, balance_micro_cents: a.balanceMicroCents, max_concurrent_jobs: a.maxConcurrentJobs,
  segments: json(a.segments), allowed_models: json(a.allowedModels), discounts: json(a.discounts), webhook_secret: a.webhookSecret,
  previous_webhook_secret: a.previousWebhookSecret, previous_webhook_secret_expires_at: a.previousWebhookSecretExpiresAt, created_at: a.createdAt
})

const jobRow = (j: Job) => ({
  id: j.id, account_id: j.accountId, request_id: j.requestId, model: j.model, version: j.version, input: json(j.input),
  webhook_url: j.webhookUrl, status: j.status, cost_micro_cents: j.costMicroCents,
  // The release's error had only the spec's code and message.
  error: json(j.error === null ? null : { code: j.error.code, message: j.error.message }), outputs: json(j.outputs),
  created_at: j.createdAt, estimated_completion_at: j.estimatedCompletionAt, started_at: j.startedAt, completed_at: j.completedAt,
  attempts: j.attempts, lease_owner: j.leaseOwner, lease_expires_at: j.leaseExpiresAt
})

/**
 * Writes `release` into the release's tables. `upTo` is how many of its migrations the schema
 * has (2 or more): uploads need 3, their verified_at 4.
 */
export const seedRelease = (upTo = 4) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const a of [alice, bob]) yield* sql`INSERT INTO accounts ${sql.insert(accountRow(a))}`
    for (const e of [...release.ledger.alice, ...release.ledger.bob]) {
      yield* sql`INSERT INTO ledger ${
        sql.insert({ id: e.id, account_id: e.accountId, job_id: e.jobId, kind: e.kind, amount_micro_cents: e.amountMicroCents, created_at: e.createdAt })
      }`
    }
    for (const k of release.keys) {
      yield* sql`INSERT INTO api_keys ${
        sql.insert({
          id: k.id, account_id: k.accountId, name: k.name, scopes: json(k.scopes), allowed_ips: json(k.allowedIPs), hash: k.hash,
          hint: k.hint, active: k.active ? 1 : 0, expires_at: k.expiresAt, created_at: k.createdAt
        })
      }`
    }
    yield* sql`INSERT INTO catalog (id, document, revision) VALUES (1, ${json(release.catalog.document)}, ${release.catalog.revision})`
    for (const j of Object.values(release.jobs)) yield* sql`INSERT INTO jobs ${sql.insert(jobRow(j))}`
    yield* sql`INSERT INTO idempotency_keys ${
      sql.insert({
        account_id: alice.id, idempotency_key: release.idempotency.key, request_hash: release.idempotency.requestHash,
        job_id: pending.id, created_at: pending.createdAt
      })
    }`
    for (const d of deliveries) {
      yield* sql`INSERT INTO webhook_deliveries ${
        sql.insert({
          id: d.id, job_id: d.jobId, account_id: d.accountId, url: d.url, payload: d.payload, status: d.status, attempts: json(d.attempts),
          next_attempt_at: d.nextAttemptAt, lease_owner: d.leaseOwner, lease_expires_at: d.leaseExpiresAt, created_at: d.createdAt
        })
      }`
    }
    if (upTo < 3) return
    for (const u of release.uploads) {
      yield* sql`INSERT INTO uploads ${
        sql.insert({
          id: u.id, account_id: u.accountId, filename: u.filename, content_type: u.contentType, status: u.status, size: u.size,
          created_at: u.createdAt, upload_url_expires_at: u.uploadUrlExpiresAt, expires_at: u.expiresAt, lease_owner: u.leaseOwner,
          lease_expires_at: u.leaseExpiresAt, ...(upTo >= 4 ? { verified_at: u.verifiedAt } : {})
        })
      }`
    }
  })
