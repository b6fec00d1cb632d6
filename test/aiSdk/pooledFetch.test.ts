/**
 * pooledFetch: an AI SDK package's requests over a bounded pool of kept-alive connections, as
 * the built-in providers send theirs. 200 requests at once hold at most `maxConnections`
 * sockets, every one is answered, and the connections are reused, not opened per request.
 */
import { pooledFetch } from "genjobs/providers/ai-sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CountingServer, startCountingServer } from "../support/countingServer.js"

let server: CountingServer
beforeAll(async () => {
  server = await startCountingServer((req, res) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ path: req.url }))
    }, 10)
  })
})
afterAll(() => server?.close())

describe("pooledFetch", () => {
  it("200 requests at once go over at most maxConnections kept-alive sockets, each answered with its own body", async () => {
    const fetch = pooledFetch({ maxConnections: 3 })
    const bodies = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      const response = await fetch(`${server.url}/v1/predictions/p${i}`, { headers: { authorization: "Bearer t" } })
      expect(response.status).toBe(200)
      return (await response.json()) as { path: string }
    }))
    expect(bodies.map((b) => b.path)).toEqual(Array.from({ length: 200 }, (_, i) => `/v1/predictions/p${i}`))
    expect(server.seen.mostOpen).toBeLessThanOrEqual(3)
    expect(server.seen.opened).toBeLessThanOrEqual(3)
  })
})
