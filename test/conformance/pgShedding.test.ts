import { Cause, Effect, Exit, Fiber, ManagedRuntime, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerPgClientWithPoolUse } from "../../adapters/sql/pgPool.js"
import { PgPoolUse } from "../../adapters/sql/pgPoolUse.js"
import { StoreBusy } from "../../src/domain/errors.js"
import { RequestStoreWait } from "../../src/ports/StoreWait.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { waitFor } from "../support/waitFor.js"

const url = await freshPostgresUrl()
const BOUND_MS = 300
// The one connection is held this long, past every request's bound.
const HOLD_SECONDS = 1.5

/** The StoreBusy a failed query was refused with, if it was shed: the cause of the SqlError's reason. */
const shedOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit)
    ? (Option.getOrUndefined(Cause.findErrorOption(exit.cause)) as { readonly reason?: { readonly cause?: unknown } } | undefined)?.reason?.cause
    : undefined

describe.skipIf(url === undefined)("shedRequests on a pool of one connection", () => {
  let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient | PgPoolUse, unknown>
  beforeAll(() => {
    runtime = ManagedRuntime.make(layerPgClientWithPoolUse({ url: Redacted.make(url!), maxConnections: 1 }))
  })
  afterAll(() => runtime?.dispose())

  const waiting = () => runtime.runPromise(Effect.map(PgPoolUse, (use) => use().waiting))
  /** Runs `name`'s query in a fiber of its own, as a request (with `wait`) or outside any (without). */
  const start = (name: string, served: Array<string>, wait?: { boundMs: number; underWay: boolean }) => {
    const query = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT ${name} AS name`).pipe(
      Effect.tap(() => Effect.sync(() => served.push(name)))
    )
    return runtime.runFork(wait === undefined ? query : Effect.provideService(query, RequestStoreWait, wait))
  }

  it("queues a request under way ahead of the rest and never sheds it; sheds one not started at its bound; callers outside requests wait", async () => {
    const served: Array<string> = []
    const holder = runtime.runFork(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_sleep(${HOLD_SECONDS})`))
    expect(await waitFor(async () => (await runtime.runPromise(Effect.map(PgPoolUse, (use) => use().idle))) === 0 && (await waiting()) === 0)).toBe(true)

    // In this order: a worker's query, a request that has not started, one under way.
    const worker = start("worker", served)
    expect(await waitFor(async () => (await waiting()) === 1)).toBe(true)
    const patient = start("not started", served, { boundMs: 60_000, underWay: false })
    expect(await waitFor(async () => (await waiting()) === 2)).toBe(true)
    const underWay = start("under way", served, { boundMs: BOUND_MS, underWay: true })
    expect(await waitFor(async () => (await waiting()) === 3)).toBe(true)

    // A request that has not started, with the bound: shed when the bound runs out.
    const started = performance.now()
    const shed = await runtime.runPromiseExit(
      Effect.provideService(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 'shed'`), RequestStoreWait, { boundMs: BOUND_MS, underWay: false })
    )
    const shedAfter = performance.now() - started
    expect(shedOf(shed)).toBeInstanceOf(StoreBusy)
    expect(shedAfter).toBeGreaterThanOrEqual(BOUND_MS - 50)
    expect(shedAfter).toBeLessThan(HOLD_SECONDS * 1000)

    await runtime.runPromise(Fiber.join(holder))
    for (const fiber of [underWay, worker, patient]) expect(Exit.isSuccess(await runtime.runPromise(Fiber.await(fiber)))).toBe(true)
    // The request under way waited past its bound and was served first; the others in their order.
    expect(served).toEqual(["under way", "worker", "not started"])
  })

  it("sheds a request at once when the holds it saw while others waited say the queue outlasts its bound", async () => {
    const hold = () => runtime.runFork(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_sleep(${HOLD_SECONDS})`))
    const held = () => waitFor(async () => (await runtime.runPromise(Effect.map(PgPoolUse, (use) => use().idle))) === 0)
    // A hold of HOLD_SECONDS while a worker's query waits: the pool serves one caller per such
    // hold, so a request finding the connection held again cannot be served in the bound.
    const first = hold()
    expect(await held()).toBe(true)
    const worker = start("worker", [])
    expect(await waitFor(async () => (await waiting()) === 1)).toBe(true)
    await runtime.runPromise(Fiber.join(first))
    await runtime.runPromise(Fiber.join(worker))
    const holder = hold()
    expect(await held()).toBe(true)
    const started = performance.now()
    const shed = await runtime.runPromiseExit(
      Effect.provideService(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 'shed'`), RequestStoreWait, { boundMs: BOUND_MS, underWay: false })
    )
    expect(shedOf(shed)).toBeInstanceOf(StoreBusy)
    // At once: well before the bound would have run out.
    expect(performance.now() - started).toBeLessThan(BOUND_MS - 100)
    expect((shedOf(shed) as StoreBusy).retryAfterSeconds).toBeGreaterThanOrEqual(1)
    await runtime.runPromise(Fiber.join(holder))
  })
})
