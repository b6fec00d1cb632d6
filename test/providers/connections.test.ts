/**
 * A provider's requests share a bounded pool of kept-alive connections: however many
 * generations are polled at once, the process holds at most `maxConnections` sockets to the
 * provider (its file handles stay bounded), and every request beyond them is answered in turn.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { replicateProvider } from "genjobs/providers/replicate"
import { requestFor } from "./support.js"

/** A Replicate API answering every prediction read after `delayMs`, counting the connections it was opened. */
let server: Server
let baseUrl: string
const seen = { connections: 0, open: 0, mostOpen: 0, requests: 0 }
const DELAY_MS = 20

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.requests++
    const id = req.url!.split("/").at(-1)!
    setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ id, status: "processing" }))
    }, DELAY_MS)
  })
  server.keepAliveTimeout = 10_000
  server.on("connection", (socket) => {
    seen.connections++
    seen.mostOpen = Math.max(seen.mostOpen, ++seen.open)
    socket.on("close", () => seen.open--)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

describe("provider connections", () => {
  it.live("200 polls at once go over at most maxConnections kept-alive sockets, and every one is answered", () =>
    Effect.gen(function*() {
      const provider = replicateProvider({ apiToken: "r8_test", baseUrl, maxConnections: 4, requestTimeoutMs: 5_000 })
      const request = requestFor("acme/image-gen", { prompt: "p" })
      const polled = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => provider.poll({ id: `p${i}` }, request),
        { concurrency: "unbounded" }
      )
      expect(polled.every((status) => status._tag === "Running")).toBe(true)
      expect(seen.requests).toBe(200)
      expect(seen.mostOpen).toBeLessThanOrEqual(4)
      // Kept alive: the 200 requests did not each open a connection of their own.
      expect(seen.connections).toBeLessThanOrEqual(4)
    }))
})
