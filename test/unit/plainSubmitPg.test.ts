import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { describe, expect, it } from "vitest"
import { makePlainSubmitPg } from "../../adapters/sql/jobs/submit.js"
import { makeLeaseClock } from "../../adapters/sql/queue/context.js"
import { layerSqlTables, SqlTables } from "../../adapters/sql/tables.js"
import type { AccountId, ApiKeyId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { job } from "../conformance/fixtures.js"

/** PostgreSQL's statement constructor with nothing to run on: the statements here are only compiled. */
const pgSql = Statement.make(Effect.die("not run"), PgClient.makeCompiler(), [], undefined) as unknown as SqlClient.SqlClient

const plainSubmitOf = (prefix?: string) =>
  Effect.runSync(Effect.map(Effect.service(SqlTables), (t) => makePlainSubmitPg({ sql: pgSql, t, clock: makeLeaseClock(pgSql, false) })).pipe(
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

describe("the plain submit's statement on PostgreSQL", () => {
  it.each(jobs)("is the statement its fragments build, text and values: %s", (_, submitted) => {
    for (const [prefix, maxConcurrentJobs] of [[undefined, 100], ["other_", 1]] as const) {
      const { built, statement } = plainSubmitOf(prefix)
      // The first call compiles the text; the second is the one every later submit makes.
      for (let call = 0; call < 2; call++) {
        expect(sameLedgerIds(statement(submitted, maxConcurrentJobs).compile())).toStrictEqual(
          sameLedgerIds(built(submitted, maxConcurrentJobs).compile())
        )
      }
    }
  })

  it("keeps its text for the table set it was made for", () => {
    const first = plainSubmitOf("one_").statement(job(account), 1).compile()[0]
    expect(first).toContain(`"one_jobs"`)
    expect(plainSubmitOf("two_").statement(job(account), 1).compile()[0]).toBe(first.replaceAll("one_", "two_"))
  })
})
