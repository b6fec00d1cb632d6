import { Effect, Option, Schema } from "effect"
import { SqlClient, type SqlError, type Statement } from "effect/sql"
import { compareGroups, type SpendDimension, type SpendGroup } from "../../src/domain/spend.js"
import type { AccountSettingsRepo } from "../../src/ports/AccountSettingsRepo.js"
import type { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { newerThan, olderThan } from "./cursorFragments.js"
import { indexedBy } from "./indexedBy.js"
import { NO_KEY, readSpent } from "./jobs/spend.js"
import {
  AccountRow,
  ApiKeyRow,
  budgetColumns,
  DbInt,
  decodeRows,
  DeliveryRow,
  JobFromRow,
  LedgerRow,
  storeErrors,
  toAccount,
  toApiKey,
  toDelivery,
  toLedgerEntry
} from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeAccounts = decodeRows(Schema.Array(AccountRow))
const decodeKeys = decodeRows(Schema.Array(ApiKeyRow))
const decodeJobs = decodeRows(Schema.Array(JobFromRow))
const decodeDeliveries = decodeRows(Schema.Array(DeliveryRow))
const decodeLedger = decodeRows(Schema.Array(LedgerRow))
const decodeCounts = decodeRows(Schema.Array(Schema.Struct({ status: Schema.String, n: DbInt })))
const decodeWaiting = decodeRows(Schema.Array(Schema.Struct({
  account_id: Schema.String,
  model: Schema.String,
  version: Schema.String,
  n: DbInt,
  head_key: DbInt,
  tail_key: DbInt,
  head_id: Schema.String,
  weight: DbInt
})))
const decodeRunning = decodeRows(Schema.Array(Schema.Struct({ model: Schema.String, version: Schema.String, n: DbInt })))
const decodeRuns = decodeRows(Schema.Array(Schema.Struct({ model: Schema.String, run_ms: DbInt })))
const decodeSpend = decodeRows(Schema.Array(Schema.Struct({
  account_id: Schema.optional(Schema.String),
  key_id: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  day: Schema.optional(DbInt),
  hour: Schema.optional(DbInt),
  charged: DbInt,
  refunded: DbInt,
  jobs: DbInt,
  failed: DbInt,
  cancelled: DbInt
})))

/** Each dimension of a spend read as its SQL expression. */
const DIMENSIONS: Record<SpendDimension, string> = {
  account: "account_id",
  key: "key_id",
  model: "model",
  day: "hour - hour % 86400000",
  hour: "hour"
}
const COLUMN_OF: Record<SpendDimension, string> = { account: "account_id", key: "key_id", model: "model", day: "day", hour: "hour" }

/** `%`, `_` and the escape itself match literally in a LIKE pattern. */
export const likeFragment = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** The operator's reads across accounts, and account settings changes. */
export const makeSqlAdmin = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables

  const when = <A>(value: A | undefined, fragment: (value: A) => Statement.Fragment): Array<Statement.Fragment> =>
    value === undefined ? [] : [fragment(value)]

  const findAccount = (id: string) =>
    sql`SELECT * FROM ${t.accounts} WHERE id = ${id}`.pipe(
      Effect.flatMap(decodeAccounts),
      Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toAccount))
    )

  const reads: AdminReadRepo["Service"] = {
    accounts: ({ after, limit, search }) =>
      sql`SELECT * FROM ${t.accounts} WHERE ${
        sql.and([
          ...when(search, (s) => sql`(LOWER(name) LIKE ${likeFragment(s)} ESCAPE '\\' OR LOWER(id) LIKE ${likeFragment(s)} ESCAPE '\\')`),
          ...olderThan(sql, after)
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.pipe(
        Effect.flatMap(decodeAccounts),
        Effect.map((rows) => rows.map(toAccount)),
        storeErrors("list accounts")
      ),
    keys: (accountId) =>
      sql`SELECT * FROM ${t.api_keys} WHERE account_id = ${accountId} ORDER BY created_at, id`.pipe(
        Effect.flatMap(decodeKeys),
        Effect.map((rows) => rows.map(toApiKey)),
        storeErrors("list API keys")
      ),
    jobs: (query) =>
      sql`SELECT * FROM ${t.jobs} WHERE ${
        sql.and([
          ...when(query.accountId, (id) => sql`account_id = ${id}`),
          ...when(query.status, (status) => sql`status = ${status}`),
          ...when(query.model, (model) => sql`model = ${model}`),
          ...when(query.createdFrom, (from) => sql`created_at >= ${from}`),
          ...when(query.createdBefore, (before) => sql`created_at < ${before}`),
          ...olderThan(sql, query.after)
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`.pipe(
        Effect.flatMap(decodeJobs),
        storeErrors("list jobs across accounts")
      ),
    deliveries: (query) =>
      sql`SELECT * FROM ${t.webhook_deliveries} WHERE ${
        sql.and([
          ...when(query.accountId, (id) => sql`account_id = ${id}`),
          ...when(query.status, (status) => sql`status = ${status}`),
          ...olderThan(sql, query.after)
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`.pipe(
        Effect.flatMap(decodeDeliveries),
        Effect.map((rows) => rows.map(toDelivery)),
        storeErrors("list webhook deliveries across accounts")
      ),
    ledger: ({ accountId, after, limit }) =>
      sql`SELECT * FROM ${t.ledger} WHERE ${sql.and([sql`account_id = ${accountId}`, ...newerThan(sql, after)])}
        ORDER BY created_at, id LIMIT ${limit + 1}`.pipe(
        Effect.flatMap(decodeLedger),
        Effect.map((rows) => rows.map(toLedgerEntry)),
        storeErrors("read ledger page")
      ),
    spend: ({ accountId, from, groupBy, to }) => {
      const dims = sql.literal(groupBy.map((dim) => `${DIMENSIONS[dim]} AS ${COLUMN_OF[dim]}`).join(", "))
      const grouped = sql.literal(groupBy.map((dim) => DIMENSIONS[dim]).join(", "))
      return sql`SELECT ${dims}, SUM(charged_micro_cents) AS charged, SUM(refunded_micro_cents) AS refunded,
          SUM(jobs) AS jobs, SUM(failed) AS failed, SUM(cancelled) AS cancelled
        FROM ${t.spend_hourly} WHERE ${
        sql.and([sql`hour >= ${from}`, sql`hour < ${to}`, ...when(accountId, (id) => sql`account_id = ${id}`)])
      } GROUP BY ${grouped}`.pipe(
        Effect.flatMap(decodeSpend),
        Effect.map((rows) =>
          rows.map((row): SpendGroup => ({
            ...(row.account_id === undefined ? {} : { account: row.account_id }),
            ...(row.key_id === undefined ? {} : { key: row.key_id === NO_KEY ? null : row.key_id }),
            ...(row.model === undefined ? {} : { model: row.model }),
            ...(row.day === undefined ? {} : { day: row.day }),
            ...(row.hour === undefined ? {} : { hour: row.hour }),
            chargedMicroCents: row.charged,
            refundedMicroCents: row.refunded,
            jobs: row.jobs,
            failed: row.failed,
            cancelled: row.cancelled
          })).sort(compareGroups(groupBy))
        ),
        storeErrors("read spend")
      )
    },
    budgetSpend: ({ accountId, keyId, since }) => readSpent(sql, t, accountId, keyId, since).pipe(storeErrors("read budget spend")),
    stats: ({ from, limit, to }) =>
      Effect.all([
        // Each status from its partial index (jobs_pending; jobs_lease_order on PostgreSQL, jobs_leases on SQLite).
        sql`SELECT 'pending' AS status, COUNT(*) AS n FROM ${t.jobs} WHERE status = 'pending'
          UNION ALL SELECT 'processing' AS status, COUNT(*) AS n FROM ${t.jobs} WHERE status = 'processing'`.pipe(
          Effect.flatMap(decodeCounts)
        ),
        // Ended jobs by their end, from jobs_ended (indexedBy.ts: through the status index SQLite
        // read every completed job and sorted them, where the newest few are asked for).
        sql`SELECT model, completed_at - started_at AS run_ms FROM ${indexedBy(sql, t.jobs, t.jobs_ended)}
          WHERE completed_at >= ${from} AND completed_at < ${to} AND status = 'completed' AND started_at IS NOT NULL
          ORDER BY completed_at DESC LIMIT ${limit}`.pipe(Effect.flatMap(decodeRuns))
      ]).pipe(
        Effect.map(([counts, runs]) => ({
          pending: counts.find((c) => c.status === "pending")?.n ?? 0,
          processing: counts.find((c) => c.status === "processing")?.n ?? 0,
          runs: runs.map((r) => ({ model: r.model, runMs: r.run_ms }))
        })),
        storeErrors("read stats")
      ),
    waitingSummary: Effect.all([
      // Pending jobs from their partial index, grouped; each group's account for its weight.
      sql`SELECT g.account_id, g.model, g.version, g.n, g.head_key, g.tail_key, g.head_id, a.fair_weight AS weight
        FROM (SELECT account_id, model, version, COUNT(*) AS n, MIN(fair_key) AS head_key, MAX(fair_key) AS tail_key, MIN(id) AS head_id
          FROM ${t.jobs} WHERE status = 'pending' GROUP BY account_id, model, version) g
        JOIN ${t.accounts} a ON a.id = g.account_id`.pipe(Effect.flatMap(decodeWaiting)),
      // Counted in the order of jobs_processing_version's entries (indexedBy.ts), not sorted.
      sql`SELECT model, version, COUNT(*) AS n FROM ${indexedBy(sql, t.jobs, t.jobs_processing_version)}
        WHERE status = 'processing' GROUP BY model, version`.pipe(
        Effect.flatMap(decodeRunning)
      )
    ]).pipe(
      Effect.map(([waiting, running]) => ({
        waiting: waiting.map((row) => ({
          accountId: row.account_id,
          model: row.model,
          version: row.version,
          count: row.n,
          headKey: row.head_key,
          tailKey: row.tail_key,
          headId: row.head_id,
          weight: row.weight
        })),
        running: running.map((row) => ({ model: row.model, version: row.version, count: row.n }))
      })),
      storeErrors("read the waiting jobs")
    )
  }

  const settings: AccountSettingsRepo["Service"] = {
    update: (id, patch) => {
      const columns = {
        ...(patch.name === undefined ? {} : { name: patch.name }),
        ...(patch.maxConcurrentJobs === undefined ? {} : { max_concurrent_jobs: patch.maxConcurrentJobs }),
        ...(patch.segments === undefined ? {} : { segments: JSON.stringify(patch.segments) }),
        ...(patch.allowedModels === undefined ? {} : { allowed_models: JSON.stringify(patch.allowedModels) }),
        ...(patch.discounts === undefined ? {} : { discounts: JSON.stringify(patch.discounts) }),
        ...(patch.budget === undefined ? {} : budgetColumns(patch.budget)),
        ...(patch.fairShareWeight === undefined ? {} : { fair_weight: patch.fairShareWeight }),
        ...(patch.standardWebhooks === undefined ? {} : { standard_webhooks: patch.standardWebhooks ? 1 : 0 })
      }
      // Typed as one effect: the union of a Statement and Effect.void does not pipe in incremental builds.
      const write: Effect.Effect<unknown, SqlError.SqlError> = Object.keys(columns).length === 0
        ? Effect.void
        : sql`UPDATE ${t.accounts} SET ${sql.update(columns)} WHERE id = ${id}`
      return write.pipe(Effect.andThen(findAccount(id)), storeErrors("update account"))
    },
    updateKeyBudget: (id, budget) =>
      sql`UPDATE ${t.api_keys} SET ${sql.update(budgetColumns(budget))} WHERE id = ${id}`.pipe(
        Effect.andThen(sql`SELECT * FROM ${t.api_keys} WHERE id = ${id}`),
        Effect.flatMap(decodeKeys),
        Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toApiKey)),
        storeErrors("update API key")
      )
  }

  return { reads, settings } as const
})
