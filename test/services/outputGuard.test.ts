import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { layerGuardedHttpClient } from "../../adapters/net/guardedHttpClient.js"
import type { RequestId } from "../../src/domain/ids.js"
import { outputUrlRefusal } from "../../src/domain/publicAddress.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import type { ProviderOutput } from "../../src/ports/Provider.js"
import { Jobs } from "../../src/services/Jobs.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"
import { finishing } from "../support/providers.js"

const PNG = Buffer.from([137, 80, 78, 71])

/** A file host on 127.0.0.1 that counts what it is asked for: `/out.png` and `/moved` (a redirect to `/out.png`). */
const fileHost = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ base: string; port: number; asked: Array<{ url: string; headers: IncomingHttpHeaders }>; close: () => void }>((resolve) => {
      const asked: Array<{ url: string; headers: IncomingHttpHeaders }> = []
      const server = createServer((req, res) => {
        asked.push({ url: req.url ?? "", headers: req.headers })
        if (req.url === "/moved") return res.writeHead(302, { location: `http://localhost:${port()}/out.png` }).end()
        res.writeHead(200, { "content-type": "image/png" }).end(PNG)
      })
      const port = () => (server.address() as AddressInfo).port
      server.listen(0, "127.0.0.1", () => resolve({ base: `http://127.0.0.1:${port()}`, port: port(), asked, close: () => server.close() }))
    })
  ),
  (host) => Effect.sync(host.close)
)

const imageAt = (url: string, headers?: Record<string, string>): ProviderOutput => ({
  type: "image",
  source: { _tag: "Url", url, ...(headers === undefined ? {} : { headers }) }
})

/** A client that answers `from` with a redirect to `to` itself and sends everything else through the guarded client. */
const redirecting = (from: string, to: string) =>
  Layer.effect(
    HttpClient.HttpClient,
    HttpClient.HttpClient.useSync((guarded) =>
      HttpClient.make((request) =>
        request.url === from
          ? Effect.succeed(HttpClientResponse.fromWeb(request, new Response(null, { status: 302, headers: { location: to } })))
          : guarded.execute(request)
      ))
  ).pipe(Layer.provide(layerGuardedHttpClient({ allowPrivate: false })))

/** Runs one job whose provider answers `output`, with the engine's guard (or its opt-in); answers the job and whether it was refunded. */
const runWith = (output: ProviderOutput, options: { readonly allowPrivate?: boolean; readonly http?: Layer.Layer<HttpClient.HttpClient> } = {}) =>
  Effect.gen(function*() {
    const caller = yield* demoCaller(100_000)
    const { job } = yield* (yield* Jobs).submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: "p" } }, "req_guard" as RequestId)
    yield* (yield* Worker).runOnce("guard")
    const ended = Option.getOrThrow(yield* (yield* JobRepo).get(job.id))
    const balance = Option.getOrThrow(yield* (yield* AccountRepo).get(caller.account.id)).balanceMicroCents
    return { job: ended, refunded: balance === 100_000 }
  }).pipe(Effect.provide(memoryEngine(
    finishing([output]),
    { providerOutputAllowPrivate: options.allowPrivate ?? false },
    options.http ?? layerGuardedHttpClient({ allowPrivate: options.allowPrivate ?? false })
  )))

describe("output downloads pass the address guard", () => {
  it.live("refuses outputs at loopback, private and site-local addresses: the job fails refunded, nothing is fetched", () =>
    Effect.scoped(Effect.gen(function*() {
      const host = yield* fileHost
      const urls = [`${host.base}/out.png`, "http://10.1.2.3/out.png", "http://[::1]:9/out.png", "https://[fec0::1]/out.png", "http://[::ffff:7f00:1]/out.png"]
      for (const url of urls) {
        const { job, refunded } = yield* runWith(imageAt(url))
        expect(job.status).toBe("failed")
        expect(job.error).toMatchObject({ code: "GENERATION_FAILED", message: expect.stringMatching(/^The output .* was not fetched: refused: .* is not a public address$/) })
        expect(refunded).toBe(true)
      }
      expect(host.asked).toEqual([])
    })))

  it.live("refuses a name that resolves to a private address, checked as it is dialled", () =>
    Effect.scoped(Effect.gen(function*() {
      const host = yield* fileHost
      const { job, refunded } = yield* runWith(imageAt(`http://localhost:${host.port}/out.png`))
      expect(job).toMatchObject({ status: "failed", error: { message: expect.stringMatching(/refused: localhost resolves to the non-public address/) } })
      expect(refunded).toBe(true)
      expect(host.asked).toEqual([])
    })))

  it.live("refuses a redirect to a private address or to a name that resolves to one", () =>
    Effect.scoped(Effect.gen(function*() {
      const host = yield* fileHost
      const from = "https://files.provider.example/out.png"
      for (const to of [`${host.base}/out.png`, `http://localhost:${host.port}/out.png`]) {
        const { job, refunded } = yield* runWith(imageAt(from), { http: redirecting(from, to) })
        expect(job).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED", message: expect.stringMatching(/was not fetched: refused/) } })
        expect(refunded).toBe(true)
      }
      expect(host.asked).toEqual([])
    })))

  it.live("with the opt-in, fetches from a private address and follows its redirects, the source's headers to its own origin only", () =>
    Effect.scoped(Effect.gen(function*() {
      const host = yield* fileHost
      const direct = yield* runWith(imageAt(`${host.base}/out.png`), { allowPrivate: true })
      expect(direct.job).toMatchObject({ status: "completed", outputs: [{ type: "image", contentType: "image/png" }] })
      const moved = yield* runWith(imageAt(`${host.base}/moved`, { authorization: "Bearer provider-token" }), { allowPrivate: true })
      expect(moved.job.status).toBe("completed")
      expect(host.asked.map((a) => a.url)).toEqual(["/out.png", "/moved", "/out.png"])
      expect(host.asked[1]!.headers["authorization"]).toBe("Bearer provider-token")
      // The redirect went to localhost, another origin than 127.0.0.1: the token stayed behind.
      expect(host.asked[2]!.headers["authorization"]).toBeUndefined()
    })))
})

describe("outputUrlRefusal", () => {
  it("judges the scheme and an address in the URL; names are left to the dialler", () => {
    expect(outputUrlRefusal("file:///etc/passwd", false)).toBe("file: URLs are not fetched")
    expect(outputUrlRefusal("not a url", true)).toBe("it is not a URL")
    expect(outputUrlRefusal("http://2130706433/x", false)).toBe("127.0.0.1 is not a public address")
    expect(outputUrlRefusal("http://[fec0::1]/x", false)).toBe("fec0::1 is not a public address")
    expect(outputUrlRefusal("http://[fec0::1]/x", true)).toBeUndefined()
    expect(outputUrlRefusal("https://93.184.216.34/x", false)).toBeUndefined()
    expect(outputUrlRefusal("https://internal.example/x", false)).toBeUndefined()
  })
})
