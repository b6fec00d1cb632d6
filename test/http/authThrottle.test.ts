import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Result } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { memoryAuthFailures } from "../../adapters/memory/MemoryAuthFailures.js"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { generateKeySecret } from "../../src/domain/apiKeySecret.js"
import { AUTH_FAILURES_PER_MINUTE, authRetryAfterSeconds, throttleKeyOf } from "../../src/domain/authThrottle.js"
import { InvalidApiKey, Unauthorized } from "../../src/domain/accessRefusals.js"
import { AuthFailures } from "../../src/ports/AuthFailures.js"
import { AuthThrottle } from "../../src/services/AuthThrottle.js"
import { ADMIN_TOKEN, BASE, type HttpEngine, type HttpEngineOptions, makeHttpEngine } from "../support/httpEngine.js"
import { freshPostgresUrl } from "../support/postgres.js"

/** One request from `remoteAddress`, with the bearer `token`. */
const from = async (engine: HttpEngine, remoteAddress: string, path: string, token: string) => {
  const response = await engine.handler(new Request(`${BASE}${path}`, { headers: { authorization: `Bearer ${token}` } }), { remoteAddress })
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.json() as any }
}

/** `n` wrong API keys from `remoteAddress`, each answered 401 INVALID_API_KEY. */
const guess = async (engine: HttpEngine, remoteAddress: string, n: number) => {
  for (let i = 0; i < n; i++) {
    const reply = await from(engine, remoteAddress, "/v1/jobs", generateKeySecret())
    expect({ status: reply.status, code: reply.body.error.code }).toEqual({ status: 401, code: "INVALID_API_KEY" })
  }
}

const expectThrottled = (reply: Awaited<ReturnType<typeof from>>) => {
  expect({ status: reply.status, code: reply.body.error.code }).toEqual({ status: 429, code: "RATE_LIMIT_EXCEEDED" })
  expect(Number(reply.retryAfter)).toBeGreaterThanOrEqual(1)
  expect(Number(reply.retryAfter)).toBeLessThanOrEqual(120)
}

const describeThrottle = (name: string, stores: () => Promise<HttpEngineOptions["stores"] | undefined>) => {
  describe(`guessing is throttled per client address (${name})`, () => {
    let engine: HttpEngine
    beforeAll(async () => {
      engine = await makeHttpEngine({}, { stores: await stores() })
    })
    afterAll(() => engine?.dispose())

    it(`answers 429 after ${AUTH_FAILURES_PER_MINUTE} wrong API keys, a right key from that address included; other addresses go on`, async () => {
      const { key } = await engine.account()
      await guess(engine, "203.0.113.7", AUTH_FAILURES_PER_MINUTE)
      expectThrottled(await from(engine, "203.0.113.7", "/v1/jobs", generateKeySecret()))
      // Checked before the key is looked up: a guess that happens to be right is refused too.
      expectThrottled(await from(engine, "203.0.113.7", "/v1/jobs", key))
      expectThrottled(await from(engine, "::ffff:203.0.113.7", "/v1/jobs", key))
      expect((await from(engine, "203.0.113.8", "/v1/jobs", key)).status).toBe(200)
    })

    it("counts wrong admin tokens the same way, and an IPv6 client by its /64", async () => {
      for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) {
        expect((await from(engine, `2001:db8:1:2::${i + 1}`, "/admin/accounts", `wrong-${i}`)).status).toBe(401)
      }
      expectThrottled(await from(engine, "2001:db8:1:2:ffff::9", "/admin/accounts", ADMIN_TOKEN))
      expect((await from(engine, "2001:db8:1:3::1", "/admin/accounts", ADMIN_TOKEN)).status).toBe(200)
    })
  })
}

describeThrottle("memory", async () => undefined)
const dir = mkdtempSync(join(tmpdir(), "genjobs-throttle-"))
describeThrottle("sqlite", async () => layerSqlite({ filename: join(dir, "throttle.db") }))

const postgresUrl = await freshPostgresUrl()
if (postgresUrl === undefined) {
  describe.skip("guessing throttle on PostgreSQL (server not reachable)", () => {
    it("runs", () => undefined)
  })
} else {
  describeThrottle("postgres", async () => layerPostgres({ url: Redacted.make(postgresUrl) }))

  describe("guessing throttle across processes on one PostgreSQL database", () => {
    let a: HttpEngine
    let b: HttpEngine
    beforeAll(async () => {
      // Two engines, each with its own pool: what one counts, the other sees only through the database.
      a = await makeHttpEngine({}, { stores: layerPostgres({ url: Redacted.make(postgresUrl) }) })
      b = await makeHttpEngine({}, { stores: layerPostgres({ url: Redacted.make(postgresUrl) }) })
    })
    afterAll(async () => {
      await a?.dispose()
      await b?.dispose()
    })

    it("counts guesses spread over both against the one address", async () => {
      const { key } = await a.account()
      await guess(a, "198.51.100.4", AUTH_FAILURES_PER_MINUTE / 2)
      await guess(b, "198.51.100.4", AUTH_FAILURES_PER_MINUTE / 2)
      expectThrottled(await from(a, "198.51.100.4", "/v1/jobs", key))
      expectThrottled(await from(b, "198.51.100.4", "/v1/jobs", key))
      expect((await from(b, "198.51.100.5", "/v1/jobs", key)).status).toBe(200)
    })
  })
}

describe("AuthThrottle over time", () => {
  const wrongKey = Effect.fail(new InvalidApiKey({ message: "wrong" }))
  const layer = AuthThrottle.layer.pipe(Layer.provide(Layer.sync(AuthFailures, memoryAuthFailures)))

  it.effect("lets the address try again after the Retry-After it was given, and never counts a missing key", () =>
    Effect.gen(function*() {
      const throttle = yield* AuthThrottle
      yield* TestClock.adjust(30_000)
      for (let i = 0; i < 100; i++) yield* Effect.result(throttle.guard("192.0.2.1", Effect.fail(new Unauthorized({ message: "none" }))))
      for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) yield* Effect.result(throttle.guard("192.0.2.1", wrongKey))
      const refused = yield* Effect.result(throttle.guard("192.0.2.1", Effect.succeed("in")))
      const retryAfter = Result.isFailure(refused) && refused.failure._tag === "RateLimitExceeded" ? refused.failure.retryAfterSeconds : undefined
      // Thirty failures at 0:30 count through the next minute: free at 2:00, 90 seconds on.
      expect(retryAfter).toBe(90)
      yield* TestClock.adjust(89_000)
      expect(Result.isFailure(yield* Effect.result(throttle.guard("192.0.2.1", Effect.succeed("in"))))).toBe(true)
      yield* TestClock.adjust(1_000)
      expect(yield* throttle.guard("192.0.2.1", Effect.succeed("in"))).toBe("in")
    }).pipe(Effect.provide(layer)))
})

describe("the throttle's rule", () => {
  it("refuses once this minute's and the last minute's failures reach the limit, until they drop out", () => {
    expect(authRetryAfterSeconds({ current: 29, previous: 0 }, 10_000)).toBe(0)
    expect(authRetryAfterSeconds({ current: 10, previous: 20 }, 10_000)).toBe(50)
    expect(authRetryAfterSeconds({ current: 30, previous: 0 }, 10_000)).toBe(110)
    expect(authRetryAfterSeconds({ current: 30, previous: 0 }, 59_999)).toBe(61)
  })

  it("keys IPv4 (mapped or not) by address, IPv6 by its /64, and unknown addresses together", () => {
    expect(throttleKeyOf("::ffff:10.0.0.1")).toBe("10.0.0.1")
    expect(throttleKeyOf("10.0.0.1")).toBe("10.0.0.1")
    expect(throttleKeyOf("2001:db8:1:2:3:4:5:6")).toBe("2001:db8:1:2::/64")
    expect(throttleKeyOf(undefined)).toBe("unknown")
    expect(throttleKeyOf("garbage")).toBe("unknown")
  })
})
