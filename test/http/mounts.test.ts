import { genjobsHono, genjobsNext, genjobsNode, type RequestInfo } from "genjobs/http"
import { Agent, createServer, request as httpRequest, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"

/** An engine that echoes what it was handed: the body, the path, and the host's RequestInfo. */
const echoEngine = () => {
  const seen: Array<{ readonly url: string; readonly info: RequestInfo | undefined; readonly signal: AbortSignal }> = []
  return {
    seen,
    fetch: async (request: Request, info?: RequestInfo) => {
      seen.push({ url: request.url, info, signal: request.signal })
      if (new URL(request.url).pathname.endsWith("/hang")) return new Response(new ReadableStream({ pull: () => new Promise(() => {}) }))
      const headers = new Headers({ "content-type": "text/plain" })
      headers.append("set-cookie", "a=1")
      headers.append("set-cookie", "b=2")
      return new Response(request.body === null ? "no body" : await request.text(), { status: 201, headers })
    }
  }
}

let server: Server | undefined
afterEach(() => {
  server?.closeAllConnections()
  server?.close()
})

const listen = async (listener: Parameters<typeof createServer>[1]) => {
  server = createServer(listener!).listen(0, "127.0.0.1")
  await new Promise((resolve) => server!.once("listening", resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe("the node:http mount", () => {
  it("streams the body in, keeps each Set-Cookie, and passes the socket address and options", async () => {
    const engine = echoEngine()
    const base = await listen(genjobsNode(engine, { basePath: "/api", trustedProxyHops: 2 }))
    const chunks = ["first ", "second"]
    const body = new ReadableStream({ pull: (c) => (chunks.length > 0 ? c.enqueue(new TextEncoder().encode(chunks.shift())) : c.close()) })
    const response = await fetch(`${base}/api/v1/x?q=1`, { method: "POST", body, duplex: "half" } as RequestInit)
    expect([response.status, await response.text()]).toEqual([201, "first second"])
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"])
    expect(engine.seen[0]!.url).toBe(`${base}/api/v1/x?q=1`)
    expect(engine.seen[0]!.info).toEqual({ remoteAddress: "127.0.0.1", basePath: "/api", trustedProxyHops: 2 })
  })

  it("aborts the engine's request when the client goes away", async () => {
    const engine = echoEngine()
    const base = await listen(genjobsNode(engine))
    const req = httpRequest(`${base}/hang`)
    req.on("error", () => {})
    req.end()
    await expect.poll(() => engine.seen.length).toBe(1)
    req.destroy()
    await expect.poll(() => engine.seen[0]?.signal.aborted).toBe(true)
  })
})

/** A request over `agent`, answered within 5 s or failed: a connection left stuck must not hang the test. */
const send = (agent: Agent, url: string, body: string) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", agent, timeout: 5_000 }, (res) => {
      let text = ""
      res.on("data", (chunk) => (text += String(chunk)))
      res.on("end", () => resolve({ status: res.statusCode!, text }))
    })
    req.on("timeout", () => req.destroy(new Error("no answer within 5 s")))
    req.on("error", reject)
    req.end(body)
  })

describe("a body the engine answers without reading", () => {
  it("is read off, so the next request on the kept-alive connection is answered", async () => {
    // Answers 413 from the headers alone, as the engine does for a Content-Length over its limit.
    const engine = {
      fetch: async (request: Request) =>
        new URL(request.url).pathname === "/big" ? new Response("too large", { status: 413 }) : new Response(await request.text(), { status: 201 })
    }
    const base = await listen(genjobsNode(engine))
    // One socket, kept alive: the second request goes over the connection the first left.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      expect(await send(agent, `${base}/big`, "x".repeat(4_000_000))).toEqual({ status: 413, text: "too large" })
      expect(await send(agent, `${base}/next`, "after")).toEqual({ status: 201, text: "after" })
    } finally {
      agent.destroy()
    }
  })

  it("does not hold up the server's close when it stops listening while the body is read off", async () => {
    // SIGTERM right after a 413: the client has its answer while the server still reads the body
    // off, so close() finds the connection busy; once read off it must not sit out the keep-alive.
    const engine = { fetch: async () => new Response("too large", { status: 413 }) }
    await listen(genjobsNode(engine))
    server!.keepAliveTimeout = 60_000
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      const base = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`
      expect(await send(agent, `${base}/big`, "x".repeat(8_000_000))).toMatchObject({ status: 413 })
      const started = Date.now()
      await new Promise<void>((resolve) => server!.close(() => resolve()))
      expect(Date.now() - started).toBeLessThan(10_000)
    } finally {
      agent.destroy()
    }
  }, 20_000)
})

describe("the Next.js mount", () => {
  it("tells the engine no address, so IP-restricted keys fail closed unless proxies are trusted", async () => {
    const engine = echoEngine()
    const { GET, POST } = genjobsNext(engine, { basePath: "/api/genjobs" })
    await POST(new Request("http://app.test/api/genjobs/v1/jobs/submit", { method: "POST", headers: { "x-forwarded-for": "127.0.0.1" } }))
    expect(engine.seen[0]!.info).toEqual({ basePath: "/api/genjobs", trustedProxyHops: undefined })
    expect(GET).toBe(POST)
  })
})

describe("the Hono mount", () => {
  it("takes the base path from the route, and none under mount() which has taken it off", async () => {
    const engine = echoEngine()
    const handler = genjobsHono(engine)
    const raw = new Request("http://app.test/api/genjobs/health")
    await handler({ req: { raw, routePath: "/api/genjobs/*" }, env: { incoming: { socket: { remoteAddress: "10.0.0.1" } } } })
    await handler(new Request("http://app.test/health"), {})
    expect(engine.seen.map((s) => s.info)).toEqual([
      { remoteAddress: "10.0.0.1", basePath: "/api/genjobs", trustedProxyHops: undefined },
      { remoteAddress: undefined, basePath: "", trustedProxyHops: undefined }
    ])
  })
})
