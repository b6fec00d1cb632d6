import { SqlClient } from "@effect/sql"
import { Effect, Either, Option, Schema } from "effect"
import { idempotencyConflict, refuseSubmit } from "../../src/domain/admission.js"
import { engineError, type EngineError } from "../../src/domain/errors.js"
import type { JobId } from "../../src/domain/ids.js"
import { type Job, type JobEvent, type JobStatus, refundsOnEntry, transition } from "../../src/domain/job.js"
import { deliveryFor } from "../../src/domain/webhook.js"
import { DAY_MS, MINUTE_MS, type WindowUsage } from "../../src/domain/rateLimit.js"
import type { JobRepo, SubmitOutcome } from "../../src/ports/JobRepo.js"
import { postLedger } from "./ledger.js"
import { AccountRow, DbInt, JobRow, storeErrors, toAccount, toJob } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeJobs = Schema.decodeUnknown(Schema.Array(JobRow))
const decodeAccounts = Schema.decodeUnknown(Schema.Array(AccountRow))
const decodeUsage = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ n: DbInt, oldest: Schema.NullOr(DbInt) }))
)
const decodeIdempotency = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ request_hash: Schema.String, job_id: Schema.String, created_at: DbInt }))
)

const jsonOrNull = (value: unknown) => (value === null ? null : JSON.stringify(value))

export const makeSqlJobs = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  /** PostgreSQL takes row locks; SQLite's single writer already serialises transactions. */
  const forUpdate = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
  const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

  const firstJob = (rows: ReadonlyArray<unknown>) =>
    decodeJobs(rows).pipe(Effect.map((jobs) => Option.map(Option.fromNullable(jobs[0]), toJob)))

  const lockJob = (id: string) => sql`SELECT * FROM ${t.jobs} WHERE id = ${id} ${forUpdate}`.pipe(Effect.flatMap(firstJob))

  const usage = (job: Job, since: number) =>
    sql`SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM ${t.jobs}
      WHERE account_id = ${job.accountId} AND model = ${job.model} AND version = ${job.version} AND created_at > ${since}`.pipe(
      Effect.flatMap(decodeUsage),
      Effect.map((rows): WindowUsage => ({ count: rows[0]?.n ?? 0, oldest: rows[0]?.oldest ?? null }))
    )

  /**
   * Applies an event through the state machine, conditional on the status read (so a race
   * cannot apply it twice), and settles the refund and the webhook outbox row it implies.
   */
  const move = (job: Job, event: JobEvent, changes: Partial<Job>, now: number) =>
    Effect.gen(function*() {
      const to: JobStatus = Either.getOrThrow(transition(job.status, event))
      const next: Job = { ...job, ...changes, status: to }
      const updated = yield* sql`UPDATE ${t.jobs} SET
          status = ${next.status},
          error = ${jsonOrNull(next.error)},
          outputs = ${jsonOrNull(next.outputs)},
          started_at = ${next.startedAt},
          completed_at = ${next.completedAt},
          attempts = ${next.attempts},
          lease_owner = ${next.leaseOwner},
          lease_expires_at = ${next.leaseExpiresAt}
        WHERE id = ${job.id} AND status = ${job.status} AND attempts = ${job.attempts} RETURNING id`
      if (updated.length === 0) return Option.none<Job>()
      if (refundsOnEntry(to) && job.costMicroCents > 0) {
        yield* postLedger(sql, t, { accountId: job.accountId, jobId: job.id, kind: "refund", amountMicroCents: job.costMicroCents, now })
      }
      const delivery = deliveryFor(next, now)
      if (delivery !== undefined) {
        yield* sql`INSERT INTO ${t.webhook_deliveries} ${
          sql.insert({
            id: delivery.id,
            job_id: delivery.jobId,
            account_id: delivery.accountId,
            url: delivery.url,
            payload: delivery.payload,
            status: delivery.status,
            attempts: "[]",
            next_attempt_at: delivery.nextAttemptAt,
            lease_owner: null,
            lease_expires_at: null,
            created_at: delivery.createdAt
          })
        }`
      }
      return Option.some(next)
    })

  const insertJob = (job: Job) =>
    sql`INSERT INTO ${t.jobs} ${
      sql.insert({
        id: job.id,
        account_id: job.accountId,
        request_id: job.requestId,
        model: job.model,
        version: job.version,
        input: JSON.stringify(job.input),
        webhook_url: job.webhookUrl,
        status: job.status,
        cost_micro_cents: job.costMicroCents,
        error: jsonOrNull(job.error),
        outputs: jsonOrNull(job.outputs),
        created_at: job.createdAt,
        estimated_completion_at: job.estimatedCompletionAt,
        started_at: job.startedAt,
        completed_at: job.completedAt,
        attempts: job.attempts,
        lease_owner: job.leaseOwner,
        lease_expires_at: job.leaseExpiresAt
      })
    }`

  const repo: JobRepo["Type"] = {
    submit: ({ idempotency, job, maxConcurrentJobs, rateLimits }) =>
      sql.withTransaction(Effect.gen(function*() {
        // Locking the account row first serialises an account's submits across processes.
        const accounts = yield* decodeAccounts(yield* sql`SELECT * FROM ${t.accounts} WHERE id = ${job.accountId} ${forUpdate}`)
        const account = accounts[0]
        if (account === undefined) return yield* Effect.fail(engineError("INVALID_API_KEY", "The account no longer exists"))
        if (idempotency !== undefined) {
          const previous = (yield* decodeIdempotency(
            yield* sql`SELECT request_hash, job_id, created_at FROM ${t.idempotency_keys}
              WHERE account_id = ${job.accountId} AND idempotency_key = ${idempotency.key}`
          ))[0]
          if (previous !== undefined && previous.created_at >= idempotency.notBefore) {
            if (previous.request_hash !== idempotency.requestHash) return yield* Effect.fail(idempotencyConflict(idempotency.key))
            const first = yield* firstJob(yield* sql`SELECT * FROM ${t.jobs} WHERE id = ${previous.job_id}`)
            return { _tag: "Replayed", job: Option.getOrThrow(first) } satisfies SubmitOutcome
          }
        }
        const active = (yield* decodeUsage(
          yield* sql`SELECT COUNT(*) AS n, NULL AS oldest FROM ${t.jobs}
            WHERE account_id = ${job.accountId} AND status IN ('pending', 'processing')`
        ))[0]?.n ?? 0
        const refusal = refuseSubmit({
          now: job.createdAt,
          costMicroCents: job.costMicroCents,
          balanceMicroCents: toAccount(account).balanceMicroCents,
          activeJobs: active,
          maxConcurrentJobs,
          rateLimits,
          minute: yield* usage(job, job.createdAt - MINUTE_MS),
          day: yield* usage(job, job.createdAt - DAY_MS)
        })
        if (refusal !== undefined) return yield* Effect.fail(refusal)
        yield* insertJob(job)
        if (job.costMicroCents > 0) {
          yield* postLedger(sql, t, { accountId: job.accountId, jobId: job.id, kind: "charge", amountMicroCents: -job.costMicroCents, now: job.createdAt })
        }
        if (idempotency !== undefined) {
          yield* sql`INSERT INTO ${t.idempotency_keys} (account_id, idempotency_key, request_hash, job_id, created_at)
            VALUES (${job.accountId}, ${idempotency.key}, ${idempotency.requestHash}, ${job.id}, ${job.createdAt})
            ON CONFLICT (account_id, idempotency_key) DO UPDATE SET
              request_hash = ${idempotency.requestHash}, job_id = ${job.id}, created_at = ${job.createdAt}`
        }
        return { _tag: "Created", job } satisfies SubmitOutcome
      })).pipe(storeErrors("submit job")),

    get: (id) => sql`SELECT * FROM ${t.jobs} WHERE id = ${id}`.pipe(Effect.flatMap(firstJob), storeErrors("read job")),

    list: ({ accountId, after, limit, model, status }) =>
      sql`SELECT * FROM ${t.jobs} WHERE ${
        sql.and([
          sql`account_id = ${accountId}`,
          ...(status === undefined ? [] : [sql`status = ${status}`]),
          ...(model === undefined ? [] : [sql`model = ${model}`]),
          ...(after === undefined
            ? []
            : [sql`(created_at < ${after.createdAt} OR (created_at = ${after.createdAt} AND id < ${after.id}))`])
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.pipe(
        Effect.flatMap(decodeJobs),
        Effect.map((rows) => rows.map(toJob)),
        storeErrors("list jobs")
      ),

    cancel: (id, accountId, now) =>
      sql.withTransaction(Effect.gen(function*() {
        const found = yield* lockJob(id)
        if (Option.isNone(found)) return yield* Effect.fail(engineError("JOB_NOT_FOUND", `No job "${id}"`, { jobId: id }))
        const job = found.value
        if (job.accountId !== accountId) {
          return yield* Effect.fail<EngineError>(
            engineError("UNAUTHORIZED_ACCESS", "This API key has no access to the job", { jobId: id })
          )
        }
        const cannot = engineError("JOB_CANNOT_BE_CANCELLED", `Only pending jobs can be cancelled; this one is ${job.status}`, {
          jobId: id,
          status: job.status
        })
        if (Either.isLeft(transition(job.status, "Cancel"))) return yield* Effect.fail(cannot)
        const moved = yield* move(job, "Cancel", { completedAt: now }, now)
        if (Option.isNone(moved)) return yield* Effect.fail(cannot)
        return { job: moved.value, refundedMicroCents: job.costMicroCents }
      })).pipe(storeErrors("cancel job")),

    claim: ({ leaseMs, maxAttempts, now, workerId }) =>
      sql.withTransaction(Effect.gen(function*() {
        const exhausted = yield* decodeJobs(
          yield* sql`SELECT * FROM ${t.jobs} WHERE status = 'processing' AND lease_expires_at <= ${now}
            AND attempts >= ${maxAttempts} ${skipLocked}`
        )
        for (const row of exhausted) {
          yield* move(toJob(row), "Abandon", {
            error: { code: "INTERNAL_ERROR", message: "The job's workers stopped responding; its cost was refunded" },
            completedAt: now,
            leaseOwner: null,
            leaseExpiresAt: null
          }, now)
        }
        const next = yield* firstJob(
          yield* sql`SELECT * FROM ${t.jobs}
            WHERE status = 'pending' OR (status = 'processing' AND lease_expires_at <= ${now})
            ORDER BY created_at, id LIMIT 1 ${skipLocked}`
        )
        if (Option.isNone(next)) return Option.none<Job>()
        const job = next.value
        return yield* move(job, job.status === "pending" ? "Pickup" : "Reclaim", {
          attempts: job.attempts + 1,
          startedAt: job.startedAt ?? now,
          leaseOwner: workerId,
          leaseExpiresAt: now + leaseMs
        }, now)
      })).pipe(storeErrors("claim job")),

    renewLease: (id, workerId, leaseExpiresAt) =>
      sql`UPDATE ${t.jobs} SET lease_expires_at = ${leaseExpiresAt}
        WHERE id = ${id} AND status = 'processing' AND lease_owner = ${workerId} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        storeErrors("renew lease")
      ),

    complete: (id, workerId, outputs, now) =>
      sql.withTransaction(Effect.gen(function*() {
        const job = yield* lockJob(id)
        if (Option.isNone(job) || job.value.status !== "processing" || job.value.leaseOwner !== workerId) return Option.none<Job>()
        return yield* move(job.value, "Complete", { outputs, completedAt: now, leaseOwner: null, leaseExpiresAt: null }, now)
      })).pipe(storeErrors("complete job")),

    fail: (id, workerId, error, now) =>
      sql.withTransaction(Effect.gen(function*() {
        const job = yield* lockJob(id as JobId)
        if (Option.isNone(job)) return Option.none<Job>()
        const event: JobEvent = workerId === null ? "Abandon" : "Fail"
        if (workerId !== null && job.value.leaseOwner !== workerId) return Option.none<Job>()
        if (Either.isLeft(transition(job.value.status, event))) return Option.none<Job>()
        return yield* move(job.value, event, { error, completedAt: now, leaseOwner: null, leaseExpiresAt: null }, now)
      })).pipe(storeErrors("fail job"))
  }
  return repo
})
