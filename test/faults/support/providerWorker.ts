/**
 * A worker process of the fault suite: the engine on PostgreSQL with the Replicate adapter
 * pointed at a simulator (see replicateEngine.ts), until SIGTERM (or a SIGKILL by the test).
 * Environment: DATABASE_URL, FILES_DIR, REPLICATE_URL, REPLICATE_TOKEN, WORKERS, LEASE_MS, POLL_MS,
 * and PUBLIC_URL when predictions should carry a webhook (and so the marker `recover` finds).
 * Prints "worker ready" once its engine runs.
 */
import { envInt, envString, startReplicateEngine } from "./replicateEngine.js"

const engine = await startReplicateEngine({
  store: { postgres: envString("DATABASE_URL") },
  filesDir: envString("FILES_DIR"),
  replicateUrl: envString("REPLICATE_URL"),
  replicateToken: envString("REPLICATE_TOKEN"),
  workers: envInt("WORKERS"),
  leaseMs: envInt("LEASE_MS"),
  pollIntervalMs: envInt("POLL_MS"),
  publicUrl: process.env["PUBLIC_URL"]
})
process.once("SIGTERM", () => void engine.dispose().then(() => process.exit(0)))
console.log("worker ready")
