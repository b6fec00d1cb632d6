/**
 * A provider's requests share a bounded pool of kept-alive connections: however many
 * generations are polled at once, the process holds at most `maxConnections` sockets to the
 * provider (its file handles stay bounded), and every request beyond them is answered in turn.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { replicateProvider } from "genjobs/providers/replicate"
import { type CountingServer, startCountingServer } from "../support/countingServer.js"
import { requestFor } from "./support.js"

/** A Replicate API answering every prediction read after `DELAY_MS`, counting the connections it was opened. */
let server: CountingServer
const DELAY_MS = 20

beforeAll(async () => {
  server = await startCountingServer((req, res) => {
    const id = req.url!.split("/").at(-1)!
    setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ id, status: "processing" }))
    }, DELAY_MS)
  })
})
afterAll(() => server?.close())

describe("provider connections", () => {
  it.live("200 polls at once go over at most maxConnections kept-alive sockets, and every one is answered", () =>
    Effect.gen(function*() {
      const provider = replicateProvider({ apiToken: "r8_test", baseUrl: server.url, maxConnections: 4, requestTimeoutMs: 5_000 })
      const request = requestFor("acme/image-gen", { prompt: "p" })
      const polled = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => provider.poll({ id: `p${i}` }, request),
        { concurrency: "unbounded" }
      )
      expect(polled.every((status) => status._tag === "Running")).toBe(true)
      expect(server.seen.requests).toBe(200)
      expect(server.seen.mostOpen).toBeLessThanOrEqual(4)
      // Kept alive: the 200 requests did not each open a connection of their own.
      expect(server.seen.opened).toBeLessThanOrEqual(4)
    }))
})
