import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { replicateProvider } from "../../adapters/providers/replicate/ReplicateProvider.js"
import { signReplicateWebhook } from "../simulators/replicate.js"

/** A Replicate whose secret endpoint fails until `secret` is set, counting the fetches. */
const secretHost = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; fetches: () => number; answer: (secret: string) => void; close: () => void }>((resolve) => {
      let fetches = 0
      let secret: string | undefined
      const server = createServer((req, res) => {
        if (req.url === "/v1/webhooks/default/secret") fetches++
        if (secret === undefined) return res.writeHead(503, { "content-type": "application/json" }).end("{}")
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ key: secret }))
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          fetches: () => fetches,
          answer: (value) => (secret = value),
          close: () => server.close()
        }))
    })
  ),
  (host) => Effect.sync(host.close)
)

const unsigned = { headers: {}, body: new TextEncoder().encode(JSON.stringify({ id: "p1" })) }

describe("Replicate: the webhook secret fetched from Replicate", () => {
  it.effect("after a failed fetch, asks again only a minute later, however many callbacks arrive", () =>
    Effect.gen(function*() {
      const host = yield* secretHost
      const provider = replicateProvider({ apiToken: "r8_token", baseUrl: host.url })
      for (let i = 0; i < 5; i++) {
        expect((yield* Effect.flip(provider.verifyCallback!(unsigned))).message).toContain("could not be fetched")
      }
      yield* Effect.all(Array.from({ length: 5 }, () => Effect.flip(provider.verifyCallback!(unsigned))), { concurrency: "unbounded" })
      expect(host.fetches()).toBe(1)
      host.answer(`whsec_${Buffer.from("the secret").toString("base64")}`)
      yield* TestClock.adjust(59_999)
      yield* Effect.flip(provider.verifyCallback!(unsigned))
      expect(host.fetches()).toBe(1)
      yield* TestClock.adjust(1)
      // Fetched now; the callback is still refused, for its missing signature.
      expect((yield* Effect.flip(provider.verifyCallback!(unsigned))).message).toContain("headers are required")
      yield* Effect.flip(provider.verifyCallback!(unsigned))
      expect(host.fetches()).toBe(2)
    }))
})

/** A Replicate with two accounts: each token's secret endpoint answers that account's own signing secret. */
const twoAccounts = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; fetchesBy: Map<string, number>; close: () => void }>((resolve) => {
      const fetchesBy = new Map<string, number>()
      const server = createServer((req, res) => {
        const token = (req.headers.authorization ?? "").replace(/^Bearer /, "")
        fetchesBy.set(token, (fetchesBy.get(token) ?? 0) + 1)
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ key: secretOf(token) }))
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, fetchesBy, close: () => server.close() }))
    })
  ),
  (host) => Effect.sync(host.close)
)
const secretOf = (token: string) => `whsec_${Buffer.from(`secret of ${token}`).toString("base64")}`

describe("Replicate: a callback checked with the credential its job started with", () => {
  it.live("uses that credential's signing secret only, and each one's while the job's is not recorded", () =>
    Effect.gen(function*() {
      const host = yield* twoAccounts
      const provider = replicateProvider({
        apiToken: [{ id: "first", secret: "r8_first" }, { id: "second", secret: "r8_second" }],
        baseUrl: host.url
      })
      const body = JSON.stringify({ id: "p1" })
      const signedBySecond = { headers: signReplicateWebhook(body, secretOf("r8_second")), body: new TextEncoder().encode(body) }

      expect(yield* provider.verifyCallback!({ ...signedBySecond, credentialId: "second" })).toEqual({ handleId: "p1" })
      expect(host.fetchesBy.get("r8_first")).toBeUndefined()
      // Signed by the other account than the job's: refused, though that account's secret would pass it.
      const refused = yield* Effect.flip(provider.verifyCallback!({ ...signedBySecond, credentialId: "first" }))
      expect(refused.message).toContain("no webhook-signature entry matches")
      // A job whose credential is not recorded yet (its handle not committed): each account's secret is tried.
      expect(yield* provider.verifyCallback!(signedBySecond)).toEqual({ handleId: "p1" })
    }).pipe(Effect.scoped))
})
