import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { replicateProvider } from "../../adapters/providers/replicate/ReplicateProvider.js"

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
  it.scoped("after a failed fetch, asks again only a minute later, however many callbacks arrive", () =>
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
