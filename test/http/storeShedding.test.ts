import { Effect, Metric, Option, Redacted } from "effect"
import Pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { AccountId } from "../../src/domain/ids.js"
import { requestsShedOf } from "../../src/observability/metricSeries.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { type HttpEngine, makeHttpEngine, type Reply } from "../support/httpEngine.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { waitFor } from "../support/waitFor.js"

const IMAGE = "demo/image-gen/text-to-image"
const SUBMIT = { model: IMAGE, input: { prompt: "x" } }
const POOL = 2
const STORE_WAIT_MS = 300
// Each job insert holds its connection this long: two submits hold the whole pool meanwhile.
const INSERT_HOLD_SECONDS = 3
const CREDITS = 10_000_000

const postgresUrl = await freshPostgresUrl()

const shedCount = () => Effect.runPromise(Metric.value(requestsShedOf("store_busy"))).then((state) => state.count)

describe.skipIf(postgresUrl === undefined)("requests that would wait for the store past storeWaitMs (PostgreSQL)", () => {
  let engine: HttpEngine
  let db: Pg.Client
  const sleepers = async () =>
    Number((await db.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'")).rows[0].n)

  beforeAll(async () => {
    engine = await makeHttpEngine({}, {
      stores: layerPostgres({ url: Redacted.make(postgresUrl!), maxConnections: POOL }),
      http: { storeWaitMs: STORE_WAIT_MS }
    })
    db = new Pg.Client({ connectionString: postgresUrl })
    await db.connect()
    await db.query(`CREATE FUNCTION slow_insert() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(${INSERT_HOLD_SECONDS}); RETURN NEW; END $$ LANGUAGE plpgsql`)
    await db.query("CREATE TRIGGER slow_insert BEFORE INSERT ON genjobs_jobs FOR EACH ROW EXECUTE FUNCTION slow_insert()")
  })
  afterAll(async () => {
    await db?.end()
    await engine?.dispose()
  })

  it("are shed with 503 store_busy and Retry-After, writing nothing, while a caller outside any request waits its turn", async () => {
    const acc = await engine.account({ credits: CREDITS })
    const other = await engine.account({ credits: CREDITS })
    const shedBefore = await shedCount()
    // Two submits (of two accounts: one account's submits wait for each other) hold both connections in their inserts.
    const holding = [acc.post("/v1/jobs/submit", SUBMIT), other.post("/v1/jobs/submit", SUBMIT)]
    expect(await waitFor(async () => (await sleepers()) === POOL, 10_000)).toBe(true)

    const timed = async (run: () => Promise<Reply>) => {
      const started = performance.now()
      const reply = await run()
      return { reply, ms: performance.now() - started }
    }
    // A worker's store call (no request, so no bound) queues for a connection meanwhile.
    const worker = engine.runtime.runPromise(AccountRepo.use((accounts) => accounts.get(AccountId.make(acc.accountId))))

    const submitted = await timed(() => acc.post("/v1/jobs/submit", SUBMIT))
    expect({ status: submitted.reply.status, code: submitted.reply.body.error?.code, details: submitted.reply.body.error?.details })
      .toEqual({ status: 503, code: "PUBSUB_PUBLISH_FAILED", details: { reason: "store_busy" } })
    expect(Number(submitted.reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    const listed = await timed(() => acc.get("/v1/jobs"))
    expect({ status: listed.reply.status, code: listed.reply.body.error?.code, details: listed.reply.body.error?.details })
      .toEqual({ status: 503, code: "SERVICE_UNAVAILABLE", details: { reason: "store_busy" } })
    expect(Number(listed.reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    // Answered before the inserts let go of the pool (neither waited for a connection).
    expect(await sleepers()).toBe(POOL)
    expect(await shedCount() - shedBefore).toBe(2)

    // The two holding submits complete; the worker's read was served, not shed.
    const held = await Promise.all(holding)
    expect(held.map((r) => r.status)).toEqual([200, 200])
    expect(Option.map(await worker, (account) => account.id)).toEqual(Option.some(acc.accountId))
    // The shed submit wrote nothing: the account has its one job and its one charge.
    const jobs = await db.query("SELECT id FROM genjobs_jobs WHERE account_id = $1", [acc.accountId])
    expect(jobs.rows.map((row) => row.id)).toEqual([held[0]!.body.jobId])
    const account = await engine.admin("GET", `/admin/accounts/${acc.accountId}`)
    expect(account.body.balanceMicroCents).toBe(CREDITS - held[0]!.body.costMicroCents)
  })
})
