/**
 * Throughput of the job path through the real HTTP handler: submit, get, list, cancel, and of
 * uploads (presign, then a 4 KiB PUT), over memory and SQLite stores. Prints operations per second; compare runs on the same machine.
 */
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSignedUploadTarget } from "../adapters/blob/SignedUploadTarget.js"
import { layerMemoryBlobStore } from "../adapters/memory/MemoryBlobStore.js"
import { layerLocalSignals } from "../adapters/memory/LocalJobSignal.js"
import { layerMemoryStores } from "../adapters/memory/layer.js"
import { layerSqlite } from "../adapters/sql/layer.js"
import { DEMO_PROVIDER_ID, makeDemoGenerator } from "../adapters/generators/demo/DemoGenerator.js"
import { EngineServicesLive } from "../src/engine.js"
import { HttpConfig } from "../src/http/HttpConfig.js"
import { makeWebHandler } from "../src/http/webHandler.js"
import { layerGenerators } from "../src/ports/Generator.js"
import { EngineConfig } from "../src/services/EngineConfig.js"
import { demoCatalog } from "../test/support/demoCatalog.js"

const ADMIN = "bench-admin"
const N = Number(process.env.BENCH_N ?? 2000)

type Stores = Layer.Layer.Success<typeof layerMemoryStores>

const bench = async <E>(name: string, stores: Layer.Layer<Stores, E>) => {
  const services = EngineServicesLive.pipe(
    Layer.provideMerge(Layer.mergeAll(
      stores,
      layerLocalSignals,
      layerMemoryBlobStore("http://bench/files"),
      layerSignedUploadTarget({ publicUrl: "http://bench", secret: "bench" }),
      layerGenerators({ [DEMO_PROVIDER_ID]: makeDemoGenerator() }),
      EngineConfig.layer({}),
      HttpConfig.layer({ adminToken: Redacted.make(ADMIN) })
    ))
  )
  const runtime = ManagedRuntime.make(services)
  const context = await runtime.runPromise(Effect.context<ManagedRuntime.ManagedRuntime.Context<typeof runtime>>())
  const { dispose, fetch: handler } = makeWebHandler(Layer.succeedContext(context))
  const call = async (method: string, path: string, auth: string, body?: unknown) => {
    const response = await handler(new Request(`http://bench${path}`, {
      method,
      headers: { authorization: `Bearer ${auth}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }))
    return response.json() as Promise<Record<string, string>>
  }
  await call("PUT", "/admin/catalog", ADMIN, demoCatalog())
  const account = await call("POST", "/admin/accounts", ADMIN, { name: "bench", creditsMicroCents: 1e12, maxConcurrentJobs: 1e6 })
  const key = (await call("POST", `/admin/accounts/${account.id}/keys`, ADMIN, { name: "k" })).key

  const time = async (label: string, op: (i: number) => Promise<unknown>) => {
    const start = performance.now()
    for (let i = 0; i < N; i++) await op(i)
    const ms = performance.now() - start
    console.log(`${name.padEnd(8)} ${label.padEnd(10)} ${(N / (ms / 1000)).toFixed(0).padStart(7)} ops/s  ${(ms / N).toFixed(3)} ms/op`)
  }
  const ids: Array<string> = []
  await time("submit", async (i) => ids.push((await call("POST", "/v1/jobs/submit", key, { model: "demo/text-gen/text-to-text", input: { prompt: `p${i}` } })).jobId))
  await time("get", (i) => call("GET", `/v1/jobs/${ids[i]}`, key))
  await time("list", () => call("GET", "/v1/jobs?limit=20", key))
  await time("cancel", (i) => call("POST", `/v1/jobs/${ids[i]}/cancel`, key))
  const uploads: Array<{ fileId: string; uploadUrl: string }> = []
  await time("presign", async () => {
    const reply = await call("POST", "/v1/uploads/presign", key, { filename: "a.png", contentType: "image/png", size: 4096 })
    uploads.push((reply as unknown as { data: { fileId: string; uploadUrl: string } }).data)
  })
  const png = new Uint8Array(4096)
  await time("upload 4K", async (i) => {
    const response = await handler(new Request(uploads[i]!.uploadUrl, {
      method: "PUT",
      body: png,
      headers: { "content-type": "image/png", "content-length": String(png.length) }
    }))
    if (response.status !== 200) throw new Error(`upload refused: ${response.status}`)
  })
  await dispose()
  await runtime.dispose()
}

const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-"))
await bench("memory", layerMemoryStores)
await bench("sqlite", layerSqlite({ filename: join(dir, "bench.db") }))
rmSync(dir, { recursive: true, force: true })
