/**
 * The benchmarks: each figure measured beside its reference in the same run, one JSON line per
 * figure on stdout (progress on stderr). `npm run bench` runs all; `npm run bench -- queue_drain
 * pickup` (or BENCH_FIGURES=queue_drain,pickup) runs some. Sizes: see lib/env.ts and the README.
 * A figure that fails (a refused request, a job not completed) prints why and makes the exit
 * code 1; the others still run.
 */
import { budgetHistory } from "./budgetHistory.js"
import { claimCost } from "./claimCost.js"
import { drainFloor } from "./drainFloor.js"
import { duplicateKeys } from "./duplicateKeys.js"
import { engineStart } from "./engineStart.js"
import { eventStreams } from "./eventStreams.js"
import { fairness } from "./fairness.js"
import { gatedSubmit } from "./gatedSubmit.js"
import { httpFloor } from "./httpFloor.js"
import { httpStoreFloor } from "./httpStoreFloor.js"
import { httpSubmit } from "./httpSubmit.js"
import { inProcess } from "./inProcess.js"
import { log } from "./lib/report.js"
import { listPages } from "./listPages.js"
import { pickup } from "./pickup.js"
import { providerInflight } from "./providerInflight.js"
import { queueDrain } from "./queueDrain.js"
import { queuePosition } from "./queuePosition.js"
import { serverDrain } from "./serverDrain.js"
import { serverRss } from "./serverRss.js"
import { sqlClientFloor } from "./sqlClientFloor.js"
import { sqliteDrain } from "./sqliteDrain.js"
import { webhookClaim } from "./webhookClaim.js"
import { webhookDispatchFloor } from "./webhookDispatchFloor.js"
import { webhookDrain } from "./webhookDrain.js"

const figures: Record<string, () => Promise<void>> = {
  queue_drain: queueDrain,
  queue_drain_floor: drainFloor,
  sqlite_drain: sqliteDrain,
  server_drain: serverDrain,
  pickup,
  http_submit: httpSubmit,
  http_floor: httpFloor,
  http_store_floor: httpStoreFloor,
  gated_submit: gatedSubmit,
  budget_history: budgetHistory,
  claim_cost: claimCost,
  webhook_claim: webhookClaim,
  webhook_drain: webhookDrain,
  webhook_dispatch_floor: webhookDispatchFloor,
  server_rss: serverRss,
  event_streams: eventStreams,
  in_process: inProcess,
  engine_start: engineStart,
  provider_inflight: providerInflight,
  duplicate_keys: duplicateKeys,
  list_pages: listPages,
  fairness,
  queue_position: queuePosition,
  sql_client_floor: sqlClientFloor
}

const chosen = [...process.argv.slice(2), ...(process.env.BENCH_FIGURES ?? "").split(",")].map((s) => s.trim()).filter((s) => s !== "")
const unknown = chosen.filter((name) => !(name in figures))
if (unknown.length > 0) {
  console.error(`unknown figure(s) ${unknown.join(", ")}; known: ${Object.keys(figures).join(", ")}`)
  process.exit(2)
}

const start = performance.now()
const failed: Array<string> = []
for (const [name, run] of Object.entries(figures)) {
  if (chosen.length > 0 && !chosen.includes(name)) continue
  const figureStart = performance.now()
  try {
    await run()
    log(`${name} took ${Math.round((performance.now() - figureStart) / 1000)} s`)
  } catch (error) {
    failed.push(name)
    console.error(`FAILED ${name}:`, error)
  }
}
log(`done in ${Math.round((performance.now() - start) / 1000)} s${failed.length > 0 ? `; FAILED: ${failed.join(", ")}` : ""}`)
process.exit(failed.length > 0 ? 1 : 0)
