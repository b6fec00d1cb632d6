/**
 * in_process_*: the job and upload paths through the engine's web handler with no network and no
 * workers (submit, get, list, cancel, presign, a 4 KiB upload PUT), over the memory and SQLite
 * stores, sequentially. No reference: these track the handler's own cost between runs on one machine.
 */
import type { Layer } from "effect"
import type { StorePorts } from "genjobs"
import { memoryStore } from "genjobs/memory"
import { sqliteStore } from "genjobs/sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { benchModel } from "./catalog.js"
import { settings } from "./lib/env.js"
import { handlerEngine } from "./lib/handlerEngine.js"
import { emit, log } from "./lib/report.js"

const bench = async (store: string, layer: Layer.Layer<StorePorts, unknown>) => {
  const { call, engine, key } = await handlerEngine(layer)
  try {
    const n = settings.inProcessOps
    const time = async (op: string, run: (i: number) => Promise<unknown>) => {
      const start = performance.now()
      for (let i = 0; i < n; i++) await run(i)
      const seconds = (performance.now() - start) / 1000
      emit({
        figure: `in_process_${store}_${op}`,
        engine: n / seconds,
        reference: null,
        unit: "ops/s",
        better: "higher",
        referenceIs: "none: the web handler in-process, sequential; compare runs on one machine",
        params: { ops: n, msPerOp: Math.round((seconds * 1_000_000) / n) / 1000 }
      })
    }
    const ids: Array<string> = []
    await time("submit", async (i) => ids.push(String((await call("POST", "/v1/jobs/submit", key, { model: benchModel("demo"), input: { prompt: `p${i}` } }))["jobId"])))
    await time("get", (i) => call("GET", `/v1/jobs/${ids[i]}`, key))
    await time("list", () => call("GET", "/v1/jobs?limit=20", key))
    await time("cancel", (i) => call("POST", `/v1/jobs/${ids[i]}/cancel`, key))
    const uploads: Array<string> = []
    await time("presign", async () => {
      const reply = await call("POST", "/v1/uploads/presign", key, { filename: "a.png", contentType: "image/png", size: 4096 })
      uploads.push(String(reply["data"]["uploadUrl"]))
    })
    const png = new Uint8Array(4096)
    await time("upload_4k", async (i) => {
      const response = await engine.fetch(new Request(uploads[i]!, {
        method: "PUT",
        body: png,
        headers: { "content-type": "image/png", "content-length": String(png.length) }
      }))
      if (!response.ok) throw new Error(`upload answered ${response.status}: ${await response.text()}`)
    })
  } finally {
    await engine.dispose()
  }
}

export const inProcess = async () => {
  log(`in_process: memory and SQLite, ${settings.inProcessOps} of each operation`)
  await bench("memory", memoryStore())
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-"))
  try {
    await bench("sqlite", sqliteStore({ filename: join(dir, "bench.db") }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
