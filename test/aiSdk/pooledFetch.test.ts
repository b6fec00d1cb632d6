/**
 * pooledFetch: an AI SDK package's requests over a bounded pool of kept-alive connections, as
 * the built-in providers send theirs. 200 requests at once hold at most `maxConnections`
 * sockets, every one is answered, and the connections are reused, not opened per request.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { pooledFetch } from "genjobs/providers/ai-sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

let server: Server
let baseUrl: string
const seen = { connections: 0, open: 0, mostOpen: 0 }

beforeAll(async () => {
  server = createServer((req, res) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ path: req.url }))
    }, 10)
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

describe("pooledFetch", () => {
  it("200 requests at once go over at most maxConnections kept-alive sockets, each answered with its own body", async () => {
    const fetch = pooledFetch({ maxConnections: 3 })
    const bodies = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      const response = await fetch(`${baseUrl}/v1/predictions/p${i}`, { headers: { authorization: "Bearer t" } })
      expect(response.status).toBe(200)
      return (await response.json()) as { path: string }
    }))
    expect(bodies.map((b) => b.path)).toEqual(Array.from({ length: 200 }, (_, i) => `/v1/predictions/p${i}`))
    expect(seen.mostOpen).toBeLessThanOrEqual(3)
    expect(seen.connections).toBeLessThanOrEqual(3)
  })
})
