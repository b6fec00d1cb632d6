import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { describe, expect, it } from "vitest"
import { makeQueuedSubmitsPg } from "../../adapters/sql/jobs/submit.js"
import { makeLeaseClock } from "../../adapters/sql/queue/context.js"
import { layerSqlTables, SqlTables } from "../../adapters/sql/tables.js"
import type { AccountId, ApiKeyId, JobId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { SubmitGates } from "../../src/ports/JobStoreDriver.js"
import { job } from "../conformance/fixtures.js"

/** PostgreSQL's statement constructor with nothing to run on: the statements here are only compiled. */
const pgSql = Statement.make(Effect.die("not run"), PgClient.makeCompiler(), [], undefined) as unknown as SqlClient.SqlClient

const queuedSubmitsOf = (prefix?: string, wakesClaimers = true) =>
  Effect.runSync(Effect.map(Effect.service(SqlTables), (t) => makeQueuedSubmitsPg({ sql: pgSql, t, clock: makeLeaseClock(pgSql, false) }, wakesClaimers)).pipe(
    Effect.provide(layerSqlTables(prefix).pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, pgSql))))
  ))

/** A ledger line's id is made per charge (time, then random): equal when both are ledger ids of the same millisecond. */
const sameLedgerIds = ([text, values]: readonly [string, ReadonlyArray<unknown>]) =>
  [text, values.map((value) => (typeof value === "string" && value.startsWith("led_") ? value.slice(0, 13) : value))] as const

const account = "acc_plain" as AccountId
const jobs: ReadonlyArray<readonly [string, Job]> = [
  ["a keyed job", job(account, { apiKeyId: "key_1" as ApiKeyId })],
  ["a job without a key", job(account)],
  ["a key recorded as null", job(account, { apiKeyId: null })],
  ["a free job with a webhook", job(account, { costMicroCents: 0, webhookUrl: "https://hooks.genjobs.test/a" })],
  ["another account, model and time", job("acc_other" as AccountId, { model: "acme/video", version: "v9", createdAt: 1_800_000_000_000, costMicroCents: 7 })],
  ["an input of every JSON kind", job(account, { input: { s: "é\"\n", n: -1.5, b: false, z: null, a: [[], {}], o: { k: [1] } } })],
  ["a job with provider state (the Schema's row)", job(account, { providerProgress: 5, providerLog: { taken: 1, lines: 1, bytes: 3, capped: false } })]
]

const none: SubmitGates = { idempotency: undefined, minute: undefined, day: undefined, accountSpend: undefined, keySpend: undefined }
const gates: ReadonlyArray<readonly [string, SubmitGates]> = [
  ["no gate", none],
  ["every gate", {
    idempotency: { key: "k-1", record: { requestHash: "h", jobId: "job_1" as JobId, createdAt: 5 }, notBefore: 3 },
    minute: { windowMs: 60_000, bucket: 1_740_000, mostBefore: 9 },
    day: { windowMs: 86_400_000, bucket: 86_400_000, mostBefore: 99 },
    accountSpend: { since: 1_000, mostBefore: 500 },
    keySpend: { since: 2_000, mostBefore: 250 }
  }],
  ["a key and a budget", { ...none, idempotency: { key: "k-2", record: { requestHash: "g", jobId: "job_2" as JobId, createdAt: 6 }, notBefore: 0 }, keySpend: { since: 0, mostBefore: 0 } }]
]

describe("the queued submits' statements on PostgreSQL", () => {
  it.each(jobs)("the plain one is the statement its fragments build, text and values: %s", (_, submitted) => {
    for (const [prefix, maxConcurrentJobs, wakesClaimers] of [[undefined, 100, true], ["other_", 1, false]] as const) {
      const { built, plain } = queuedSubmitsOf(prefix, wakesClaimers)
      // The first call compiles the text; the second is the one every later submit makes.
      for (let call = 0; call < 2; call++) {
        expect(sameLedgerIds(plain(submitted, maxConcurrentJobs).compile())).toStrictEqual(
          sameLedgerIds(built.plain(submitted, maxConcurrentJobs).compile())
        )
      }
    }
  })

  it.each(jobs)("the gated one is the statement its fragments build, text and values, whatever the gates: %s", (_, submitted) => {
    const { built, gated } = queuedSubmitsOf()
    // One statement for every submit: the gates of each call differ from the first's.
    for (const [, carried] of [...gates, ...gates]) {
      expect(sameLedgerIds(gated(submitted, 7, carried).compile())).toStrictEqual(sameLedgerIds(built.gated(submitted, 7, carried).compile()))
    }
  })

  it("wakes the claimers of its table set's queue as it commits, where the store's queue is the queue", () => {
    const [text, values] = queuedSubmitsOf("one_").plain(job(account), 1).compile()
    expect(text).toContain("pg_notify(")
    expect(values).toContain("one_jobs")
    // With a broker no claimer listens: the statement notifies no one.
    expect(queuedSubmitsOf("one_", false).plain(job(account), 1).compile()[0]).not.toContain("pg_notify")
  })

  it("keeps its text for the table set it was made for", () => {
    const first = queuedSubmitsOf("one_").plain(job(account), 1).compile()[0]
    expect(first).toContain(`"one_jobs"`)
    expect(queuedSubmitsOf("two_").plain(job(account), 1).compile()[0]).toBe(first.replaceAll("one_", "two_"))
  })
})
