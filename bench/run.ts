/**
 * The benchmarks: each figure measured beside its reference in the same run, one JSON line per
 * figure on stdout (progress on stderr). `npm run bench` runs all; `npm run bench -- queue_drain
 * pickup` (or BENCH_FIGURES=queue_drain,pickup) runs some. Sizes: see lib/env.ts and the README.
 */
import { httpSubmit } from "./httpSubmit.js"
import { log } from "./lib/report.js"
import { pickup } from "./pickup.js"
import { queueDrain } from "./queueDrain.js"

const figures: Record<string, () => Promise<void>> = {
  queue_drain: queueDrain,
  pickup,
  http_submit: httpSubmit
}

const chosen = [...process.argv.slice(2), ...(process.env.BENCH_FIGURES ?? "").split(",")].map((s) => s.trim()).filter((s) => s !== "")
const unknown = chosen.filter((name) => !(name in figures))
if (unknown.length > 0) {
  console.error(`unknown figure(s) ${unknown.join(", ")}; known: ${Object.keys(figures).join(", ")}`)
  process.exit(2)
}

const start = performance.now()
for (const [name, run] of Object.entries(figures)) {
  if (chosen.length > 0 && !chosen.includes(name)) continue
  await run()
}
log(`done in ${Math.round((performance.now() - start) / 1000)} s`)
