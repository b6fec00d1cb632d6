import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { layerSqlStores } from "../../adapters/sql/layer.js"
import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { createAccount, job } from "./fixtures.js"

const dir = mkdtempSync(join(tmpdir(), "genjobs-sqlite-enclosed-"))
let n = 0

/** The stores over a host's own SQLite client, which the test also holds, as layerSqlStores lets a host do. */
const hostStores = () => {
  const client = SqliteClient.layer({ filename: join(dir, `host-${++n}.db`) })
  return Layer.merge(layerSqlStores(), client).pipe(Layer.provide(client))
}

const plain = (accountId: Parameters<typeof job>[0]) => ({
  job: job(accountId, { createdAt: Date.now() }),
  maxConcurrentJobs: 100,
  rateLimits: { requestsPerMinute: 0, requestsPerDay: 0 }
})

describe("SQLite: a submit inside the host's own transaction", () => {
  it("rolls back with that transaction, while submits outside it, at the same time, commit", async () => {
    const outcome = await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* JobRepo
      const account = yield* createAccount(10_000)
      const inside = plain(account.id)
      const outside = [plain(account.id), plain(account.id)]
      const results = yield* Effect.all([
        Effect.exit(sql.withTransaction(Effect.andThen(repo.submit(inside), Effect.fail("the host's rollback" as const)))),
        ...outside.map((request) => repo.submit(request))
      ], { concurrency: "unbounded" })
      return {
        results,
        inside: yield* repo.get(inside.job.id),
        outside: yield* Effect.forEach(outside, (request) => repo.get(request.job.id)),
        balance: Option.map(yield* (yield* AccountRepo).get(account.id), (a) => a.balanceMicroCents)
      }
    }).pipe(Effect.provide(hostStores())))
    expect(outcome.results.slice(1).map((r) => (r as { _tag: string })._tag)).toStrictEqual(["Created", "Created"])
    expect(Option.isNone(outcome.inside)).toBe(true)
    expect(outcome.outside.map(Option.isSome)).toStrictEqual([true, true])
    // Only the two committed submits were charged (1,000 each).
    expect(outcome.balance).toStrictEqual(Option.some(8_000))
  })

  it("commits with that transaction, seeing the host's own writes before it", async () => {
    const outcome = await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* JobRepo
      const account = yield* createAccount(1_000)
      const request = plain(account.id)
      // Funded inside the same transaction: a submit batched into another transaction could not see it.
      const result = yield* sql.withTransaction(Effect.andThen(
        sql`UPDATE genjobs_accounts SET balance_micro_cents = balance_micro_cents + 1000 WHERE id = ${account.id}`,
        Effect.andThen(repo.submit(request), repo.submit(plain(account.id)))
      ))
      return { result, stored: yield* repo.get(request.job.id) }
    }).pipe(Effect.provide(hostStores())))
    expect(outcome.result._tag).toBe("Created")
    expect(Option.isSome(outcome.stored)).toBe(true)
  })
})
