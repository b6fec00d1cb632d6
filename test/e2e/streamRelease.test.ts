import { type ClientRequest, request } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"

const KEY_PATTERN = /gjk_[A-Za-z0-9_-]{43}/

interface Opened {
  readonly status: number
  /** The bytes received when it resolved. */
  readonly body: string
  /** Every byte of the answer, once it ended. */
  readonly ended: Promise<string>
  readonly req: ClientRequest
}

/** Opens `path` on a socket of its own; resolves at the first bytes of a 200 (kept open) or the whole of any other answer. */
const open = (url: string, path: string, key: string, headers: Record<string, string> = {}) =>
  new Promise<Opened>((resolve, reject) => {
    const req = request(`${url}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers }, agent: false }, (res) => {
      let body = ""
      let whole: (text: string) => void = () => undefined
      const ended = new Promise<string>((resolve) => (whole = resolve))
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        body += chunk
        if (res.statusCode === 200) resolve({ status: 200, body, ended, req })
      })
      res.on("end", () => {
        whole(body)
        resolve({ status: res.statusCode!, body, ended, req })
      })
    })
    req.on("error", reject)
    req.end()
  })

/**
 * The bundled server (node:http): a status stream's place among the watchers is given back when
 * its client goes, with no request fiber or scope of its own to close it.
 */
describe("status streams on the bundled server", () => {
  let server: RunningServer
  let key: string
  const jobs: Array<string> = []
  beforeAll(async () => {
    server = await startServer({ DATA_DIR: tempDataDir(), WORKER_CONCURRENCY: "0", MAX_WATCHERS: "2" })
    key = KEY_PATTERN.exec(server.output)![0]
    for (let i = 0; i < 3; i++) {
      const submitted = await fetch(`${server.url}/v1/jobs/submit`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "demo/text-gen/text-to-text", input: { prompt: `p${i}` } })
      }).then((r) => r.json() as Promise<{ jobId: string }>)
      jobs.push(submitted.jobId)
    }
  }, 60_000)
  afterAll(async () => {
    await server?.stop("SIGKILL")
  })

  it("frees a stream's place when its client leaves, and ends a stream with its job", async () => {
    const first = await open(server.url, `/v1/jobs/${jobs[0]}/events`, key)
    const second = await open(server.url, `/v1/jobs/${jobs[1]}/events`, key)
    expect([first.status, second.status]).toEqual([200, 200])
    expect(first.body.startsWith(": open\n\n")).toBe(true)

    const refused = await open(server.url, `/v1/jobs/${jobs[2]}/events`, key)
    expect(refused.status).toBe(503)
    expect(JSON.parse(refused.body).error.details.reason).toBe("too_many_watchers")
    const waitRefused = await open(server.url, `/v1/jobs/${jobs[2]}`, key, { prefer: "wait=1" })
    expect(waitRefused.status).toBe(503)

    // The first client leaves: its place comes back.
    first.req.destroy()
    const deadline = Date.now() + 5_000
    let third: Opened
    do {
      third = await open(server.url, `/v1/jobs/${jobs[2]}/events`, key)
      if (third.status === 200) break
      await new Promise((r) => setTimeout(r, 50))
    } while (Date.now() < deadline)
    expect(third.status).toBe(200)

    // A cancel ends the second stream with its final event, and its place comes back too.
    const cancelled = await fetch(`${server.url}/v1/jobs/${jobs[1]}/cancel`, { method: "POST", headers: { authorization: `Bearer ${key}` } })
    expect(cancelled.status).toBe(200)
    expect(await second.ended).toContain("\"status\":\"cancelled\"")
    const again = await open(server.url, `/v1/jobs/${jobs[0]}/events`, key)
    expect(again.status).toBe(200)
    third.req.destroy()
    again.req.destroy()
  }, 30_000)
})
