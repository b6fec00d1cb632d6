import { Clock, Effect, Layer, Redacted } from "effect"
import { Statement } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeDemoProvider } from "../../adapters/generators/demo/DemoGenerator.js"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { HttpConfig } from "../../src/http/HttpConfig.js"
import { webHandlerInScope } from "../../src/http/webHandler.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { engineOver } from "../support/engineLayer.js"
import { freshPostgresUrl } from "../support/postgres.js"

const ADMIN_TOKEN = "statements-admin-token"

/** What the counted submit carries besides its body: each one takes it off the plain path. */
interface Gates {
  readonly idempotent?: boolean
  readonly rateLimited?: boolean
  readonly budgeted?: boolean
}

/** The demo catalog without rate limits, as the bench's, or with room for the test's few submits. */
const catalogFor = ({ rateLimited = false }: Gates) => {
  const catalog = demoCatalog()
  const rateLimits = rateLimited ? { requestsPerMinute: 100, requestsPerDay: 1_000 } : { requestsPerMinute: 0, requestsPerDay: 0 }
  for (const model of catalog.models) for (const version of model.versions) version.rateLimits = rateLimits
  return catalog
}

/** A statement's first words: enough to tell which it is. */
const head = (text: string) => text.replace(/\s+/g, " ").replace(/"genjobs_/g, "").replace(/"/g, "").split(" ").slice(0, 3).join(" ")

/**
 * The wall clock held at one instant, sleeps still real. The caches of the key, the address's
 * failed authentications and the catalog trust what they read for 1 to 2 s of wall time; on a
 * loaded machine the counted submit can come later than that after the warm one, and read them
 * again inside the count. Held, they never expire: what is counted is the submit's own.
 */
const heldClock = (clock: Clock.Clock): Clock.Clock => {
  const millis = clock.currentTimeMillisUnsafe()
  const nanos = BigInt(millis) * 1_000_000n
  return {
    currentTimeMillisUnsafe: () => millis,
    currentTimeMillis: Effect.succeed(millis),
    currentTimeNanosUnsafe: () => nanos,
    currentTimeNanos: Effect.succeed(nanos),
    monotonicTimeNanosUnsafe: () => clock.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: clock.monotonicTimeNanos,
    sleep: (duration) => clock.sleep(duration)
  }
}

/**
 * The statements an accepted POST /v1/jobs/submit sends to the store once the process is warm
 * (its key, address and catalog read once before), caught as each statement runs: auth, the
 * guessing throttle and the catalog answer from their caches, and the submit itself is `expected`.
 */
const submitStatements = (stores: Layer.Layer<any, unknown>, gates: Gates = {}) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    let counting = false
    const sent: Array<string> = []
    const fetch = yield* webHandlerInScope().pipe(
      Effect.provideService(Statement.CurrentTransformer, (statement) => {
        if (counting) sent.push(head(statement.compile()[0]))
        return Effect.succeed(statement)
      })
    )
    const call = async (path: string, body: unknown, token: string, method = "POST", idempotencyKey?: string) => {
      const response = await fetch(
        new Request(`http://engine.test${path}`, {
          method,
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${token}`,
            "x-forwarded-for": "192.0.2.7",
            ...(idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey })
          },
          body: JSON.stringify(body)
        })
      )
      return { status: response.status, body: await response.json() as any }
    }
    const run = <A>(f: () => Promise<A>) => Effect.promise(f)
    expect((yield* run(() => call("/admin/catalog", catalogFor(gates), ADMIN_TOKEN, "PUT"))).status).toBe(200)
    const budget = gates.budgeted ? { budget: { limitMicroCents: 5_000_000, period: "month" } } : {}
    const account = yield* run(() => call("/admin/accounts", { name: "s", creditsMicroCents: 10_000_000, ...budget }, ADMIN_TOKEN))
    const key = yield* run(() => call(`/admin/accounts/${account.body.id}/keys`, { name: "k", scopes: [], allowedIPs: [], ...budget }, ADMIN_TOKEN))
    const submit = { model: demoCatalog().models[0]!.slug, input: { prompt: "count me" } }
    const idempotencyKey = (n: number) => (gates.idempotent ? `statements-${n}` : undefined)
    // Warm: the first submit reads the key, the address's failures and the catalog into their caches.
    expect((yield* run(() => call("/v1/jobs/submit", submit, key.body.key, "POST", idempotencyKey(1)))).status).toBe(200)
    const counted = (n: number) =>
      Effect.gen(function*() {
        sent.length = 0
        counting = true
        const answer = yield* run(() => call("/v1/jobs/submit", submit, key.body.key, "POST", idempotencyKey(n)))
        counting = false
        expect(answer.status).toBe(200)
        return { answer, sent: [...sent] }
      })
    const accepted = yield* counted(2)
    // The same key again answers the first submit's job, charged once.
    const replayed = gates.idempotent ? yield* counted(2) : undefined
    if (replayed !== undefined) expect(replayed.answer.body.jobId).toBe(accepted.answer.body.jobId)
    return { accepted: accepted.sent, replayed: replayed?.sent }
  }).pipe(
    Effect.provide(Layer.merge(
      engineOver(stores as any, makeDemoProvider()),
      HttpConfig.layer({ adminToken: Redacted.make(ADMIN_TOKEN) })
    )),
    Effect.provideServiceEffect(Clock.Clock, Effect.map(Clock.clockWith(Effect.succeed), heldClock))
  )))

describe("statements of one accepted submit", () => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-statements-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("SQLite: the charge, its ledger line and spend, and the job, in one transaction; nothing for the key, address or catalog", async () => {
    const { accepted } = await submitStatements(layerSqlite({ filename: join(dir, "statements.db") }))
    expect(accepted).toEqual(["UPDATE accounts SET", "INSERT INTO ledger", "INSERT INTO spend_hourly", "INSERT INTO jobs"])
  })

  it("SQLite: an idempotency key, rate limits and budgets add their reads and writes to the one transaction", async () => {
    const { accepted, replayed } = await submitStatements(layerSqlite({ filename: join(dir, "gated.db") }), {
      idempotent: true,
      rateLimited: true,
      budgeted: true
    })
    expect(accepted).toEqual([
      "INSERT INTO idempotency_keys",
      "UPDATE accounts SET",
      "INSERT INTO ledger",
      "INSERT INTO spend_hourly",
      "SELECT (SELECT COALESCE(SUM(net_micro_cents),",
      "SELECT window_ms, SUM(n)",
      "SELECT active_jobs AS",
      "INSERT INTO rate_windows",
      "INSERT INTO jobs"
    ])
    expect(replayed).toEqual(["INSERT INTO idempotency_keys", "SELECT request_hash, job_id,", "SELECT * FROM"])
  })

  it("PostgreSQL: one statement, its NOTIFY, charge and job together; nothing for the key, address or catalog", async () => {
    const url = await freshPostgresUrl()
    if (url === undefined) return
    const { accepted } = await submitStatements(layerPostgres({ url: Redacted.make(url) }))
    expect(accepted).toEqual(["WITH notified AS"])
  })

  for (const gates of [{ idempotent: true }, { rateLimited: true }, { budgeted: true }, { idempotent: true, rateLimited: true, budgeted: true }]) {
    it(`PostgreSQL: one statement through the gate with ${Object.keys(gates).join(", ")}, and for the replay`, async () => {
      const url = await freshPostgresUrl()
      if (url === undefined) return
      const { accepted, replayed } = await submitStatements(layerPostgres({ url: Redacted.make(url) }), gates)
      expect(accepted).toEqual(["WITH gate AS"])
      if (gates.idempotent) expect(replayed).toEqual(["WITH gate AS"])
    })
  }
})
