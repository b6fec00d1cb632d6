import { Effect } from "effect"
import { Jobs } from "genjobs"
import { sqliteStore } from "genjobs/sqlite"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { benchModel } from "./catalog.js"
import { BENCH_PROVIDER, benchEngine, seed, TABLE_PREFIX } from "./lib/engine.js"

const dir = mkdtempSync(join(tmpdir(), "sq-"))
const engine = await benchEngine(sqliteStore({ filename: join(dir, "b.db"), tablePrefix: TABLE_PREFIX }), { workers: 0 })
const callers = await seed(engine, 8)
let next = 0
const run = async (n: number) => {
  const lane = async () => {
    while (next < n) {
      const i = next++
      await engine.run(Effect.flatMap(Jobs, (s) => s.submit(callers[i % callers.length]!, { model: benchModel(BENCH_PROVIDER), input: { prompt: `w${i}` } }, `req_sq_${i}` as any)))
    }
  }
  await Promise.all(Array.from({ length: 8 }, lane))
}
await run(2000)
;(globalThis as any).__sq = new Map()
next = 0
const c = process.cpuUsage(); const t = performance.now()
await run(10000)
const u = process.cpuUsage(c)
console.log("µs cpu/submit", (u.user + u.system) / 10000, "wall ms/submit", (performance.now() - t) / 10000)
const rows = [...(globalThis as any).__sq.entries()].sort((a: any, b: any) => b[1].ms - a[1].ms)
let tot = 0
for (const [k, e] of rows) { tot += e.ms; console.log((e.ms * 1000 / 10000).toFixed(1).padStart(6), "µs/submit", String(e.n).padStart(6), k) }
console.log("total µs/submit in sqlite", (tot * 1000 / 10000).toFixed(1))
await engine.dispose()
