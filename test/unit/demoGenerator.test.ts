import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { TestClock } from "effect/testing"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { crc32, inflateSync } from "node:zlib"
import { makeDemoProvider } from "../../adapters/generators/demo/DemoGenerator.js"
import type { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { GenerationProvider, OutputSource, ProviderStatus } from "../../src/ports/Provider.js"
import { providerRequestOf } from "../../src/services/providerRequest.js"
import { sampleCatalog } from "../conformance/fixtures.js"

const catalog = sampleCatalog()
const modelOf = (category: string) => catalog.models.find((m) => m.category === category)!

const job = (input: Record<string, unknown>): Job => ({
  id: "job_1" as JobId,
  accountId: "acc_1" as AccountId,
  requestId: "req_1" as RequestId,
  model: "m",
  version: "v1",
  input,
  webhookUrl: null,
  status: "processing",
  costMicroCents: 0,
  error: null,
  outputs: null,
  createdAt: 0,
  estimatedCompletionAt: 0,
  startedAt: 0,
  completedAt: null,
  attempts: 1,
  leaseOwner: "w",
  leaseExpiresAt: 1,
  providerPhase: null,
  providerHandle: null,
  providerStarts: 0,
  providerRoute: null,
  fairKey: 0
})

const bytesOf = (source: OutputSource) =>
  source._tag === "Bytes"
    ? Effect.map(Stream.runCollect(source.body), (chunks) => new Uint8Array(Buffer.concat([...chunks])))
    : Effect.die("the demo answers bytes")

/** Starts the job at the demo provider and polls it once: its status, with the outputs' bytes read. */
const startAndPoll = (provider: GenerationProvider, category: string, input: Record<string, unknown>) =>
  Effect.gen(function*() {
    const model = modelOf(category)
    const request = providerRequestOf(job(input), model, model.versions[0]!)
    const started = yield* provider.start(request)
    if (started._tag !== "Started") return yield* Effect.die("the demo starts a generation")
    return yield* provider.poll(started.handle, request)
  })

const outputsOf = (status: ProviderStatus) =>
  status._tag !== "Succeeded"
    ? Effect.die(`expected outputs, got ${JSON.stringify(status)}`)
    : Effect.forEach(status.outputs, (output) =>
      Effect.gen(function*() {
        return {
          type: output.type,
          contentType: output.source._tag === "Bytes" ? output.source.contentType : undefined,
          metadata: output.metadata,
          bytes: yield* bytesOf(output.source),
          poster: output.posterImage === undefined ? undefined : yield* bytesOf(output.posterImage)
        }
      }))

const generate = (category: string, input: Record<string, unknown>, provider = makeDemoProvider()) =>
  Effect.flatMap(startAndPoll(provider, category, input), outputsOf)

/** Reads PNG chunks and checks every CRC with an independent computation. */
const chunks = (bytes: Uint8Array) => {
  const buffer = Buffer.from(bytes)
  expect([...buffer.subarray(0, 8)]).toEqual([137, 80, 78, 71, 13, 10, 26, 10])
  const out: Array<{ type: string; data: Buffer }> = []
  for (let at = 8; at < buffer.length;) {
    const length = buffer.readUInt32BE(at)
    const type = buffer.toString("ascii", at + 4, at + 8)
    const data = buffer.subarray(at + 8, at + 8 + length)
    expect(buffer.readUInt32BE(at + 8 + length)).toBe(crc32(buffer.subarray(at + 4, at + 8 + length)))
    out.push({ type, data })
    at += 12 + length
  }
  return out
}

describe("demo provider", () => {
  it.effect("draws a valid PNG of the requested size", () =>
    Effect.gen(function*() {
      const [output] = yield* generate("image", { prompt: "fox", width: 40, height: 30 })
      expect(output).toMatchObject({ type: "image", metadata: { width: 40, height: 30, format: "png" }, contentType: "image/png" })
      const parts = chunks(output!.bytes)
      expect(parts.map((c) => c.type)).toEqual(["IHDR", "IDAT", "IEND"])
      expect([parts[0]!.data.readUInt32BE(0), parts[0]!.data.readUInt32BE(4)]).toEqual([40, 30])
      expect(inflateSync(parts[1]!.data).length).toBe(30 * (1 + 40 * 4))
    }))

  it.effect("draws the same picture for the same prompt and another for another", () =>
    Effect.gen(function*() {
      const [a] = yield* generate("image", { prompt: "fox" })
      const [b] = yield* generate("image", { prompt: "fox" })
      const [c] = yield* generate("image", { prompt: "owl" })
      expect(Buffer.from(a!.bytes).equals(Buffer.from(b!.bytes))).toBe(true)
      expect(Buffer.from(a!.bytes).equals(Buffer.from(c!.bytes))).toBe(false)
    }))

  it.effect("animates video as an APNG with a poster", () =>
    Effect.gen(function*() {
      const [output] = yield* generate("video", { prompt: "waves" })
      expect(output!.contentType).toBe("image/apng")
      const parts = chunks(output!.bytes)
      const control = parts.find((c) => c.type === "acTL")!
      expect(control.data.readUInt32BE(0)).toBe(12)
      expect(parts.filter((c) => c.type === "fcTL")).toHaveLength(12)
      expect(parts.filter((c) => c.type === "fdAT")).toHaveLength(11)
      expect(chunks(output!.poster!).map((c) => c.type)).toEqual(["IHDR", "IDAT", "IEND"])
    }))

  it.effect("renders audio as a consistent WAV of the requested duration", () =>
    Effect.gen(function*() {
      const [output] = yield* generate("audio", { prompt: "tune", duration: 0.5 })
      const wav = Buffer.from(output!.bytes)
      expect(wav.toString("ascii", 0, 4)).toBe("RIFF")
      expect(wav.readUInt32LE(4)).toBe(wav.length - 8)
      expect(wav.toString("ascii", 8, 16)).toBe("WAVEfmt ")
      expect(wav.readUInt32LE(24)).toBe(22_050)
      expect(wav.readUInt32LE(40)).toBe(wav.length - 44)
      expect(wav.readUInt32LE(40)).toBe(Math.round(0.5 * 22_050) * 2)
    }))

  it.effect("writes text about the prompt", () =>
    Effect.gen(function*() {
      const [output] = yield* generate("text", { prompt: "the sea" })
      expect(new TextDecoder().decode(output!.bytes)).toContain("the sea")
    }))

  it.effect("fails on demand: the generation ends as failed", () =>
    Effect.gen(function*() {
      expect(yield* startAndPoll(makeDemoProvider(), "text", { prompt: "x", demoFail: true })).toEqual({
        _tag: "Failed",
        message: "demoFail was set: the demo provider failed on purpose"
      })
    }))

  it.effect("runs demoDelayMs on Effect's clock: Running until then, with the time left as the poll hint", () =>
    Effect.gen(function*() {
      const provider = makeDemoProvider()
      const model = modelOf("text")
      const request = providerRequestOf(job({ prompt: "x", demoDelayMs: 5_000 }), model, model.versions[0]!)
      const started = yield* provider.start(request)
      if (started._tag !== "Started") return yield* Effect.die("started")
      yield* TestClock.adjust(4_000)
      expect(yield* provider.poll(started.handle, request)).toEqual({ _tag: "Running", pollAfterMs: 1_000 })
      yield* TestClock.adjust(999)
      expect((yield* provider.poll(started.handle, request))._tag).toBe("Running")
      yield* TestClock.adjust(1)
      expect((yield* outputsOf(yield* provider.poll(started.handle, request)))).toHaveLength(1)
      // A worker that lost the start's answer finds the same generation, due at the same time.
      expect(yield* provider.recover!(request)).toEqual({ _tag: "Found", handle: started.handle })
    }))
})

describe("demo image-to-X inputs", () => {
  const MiB = 1024 * 1024
  const serve = () =>
    Effect.acquireRelease(
      Effect.promise(() =>
        new Promise<{ server: Server; base: string }>((resolve) => {
          const server = createServer((req, res) => {
            const size = req.url === "/huge" ? 100 * MiB + 1 : req.url === "/a" ? 10 : 11
            // Chunked, with no Content-Length: only counting while reading can stop it.
            res.writeHead(200, { "content-type": "image/png" })
            let sent = 0
            const push = () => {
              while (sent < size) {
                const n = Math.min(MiB, size - sent)
                sent += n
                if (!res.write(Buffer.alloc(n, req.url === "/a" ? 1 : 2))) return void res.once("drain", push)
              }
              res.end()
            }
            res.on("error", () => {})
            push()
          })
          server.listen(0, "127.0.0.1", () => resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }))
        })
      ),
      ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
    )

  const withInput = (base: string, path: string) =>
    startAndPoll(makeDemoProvider({ inputUrlPrefixes: [`${base}/`] }), "image", { prompt: "same", imageUrl: `${base}${path}` })

  it.live("draws from the input's bytes, and refuses an input over 100 MiB while reading it (chunked, no length)", () =>
    Effect.scoped(Effect.gen(function*() {
      const { base } = yield* serve()
      const [a] = yield* Effect.flatMap(withInput(base, "/a"), outputsOf)
      const [b] = yield* Effect.flatMap(withInput(base, "/b"), outputsOf)
      expect(Buffer.from(a!.bytes).equals(Buffer.from(b!.bytes))).toBe(false)
      expect(yield* withInput(base, "/huge")).toMatchObject({ _tag: "Failed", message: expect.stringMatching(/larger than 104857600 bytes/) })
      const elsewhere = yield* startAndPoll(makeDemoProvider({ inputUrlPrefixes: ["http://files.test/"] }), "image", {
        prompt: "x",
        imageUrl: `${base}/a`
      })
      expect(elsewhere).toMatchObject({ _tag: "Failed", message: expect.stringMatching(/must be a file uploaded to this service/) })
    })))
})
