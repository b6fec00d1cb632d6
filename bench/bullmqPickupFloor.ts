/**
 * The floor under pickup_redis_p50 that the store's commit sets (a measuring aid, not a figure):
 * BullMQ's pickup with a PostgreSQL commit before each add, beside BullMQ alone and the engine on
 * Redis, timed one job of each case after the other in one run, as pickup.ts times its cases.
 * The engine commits each job to PostgreSQL before it publishes it (the store is the truth), so
 * BullMQ's add after the same commit is what the engine's pickup cannot go under on this
 * machine. Cases, each with its worker (concurrency 1) in another process:
 *
 * - `engine_redis`: Jobs.submit on Redis (commit, then the publish script) to pickupWorker.ts, as
 *   pickup_redis_p50;
 * - `bullmq`: `Queue.add` to pickupBullmqWorker.ts, pickup_redis_p50's reference;
 * - `submit_then_bullmq`: the engine's submit on the store's queue (the same job row, one commit;
 *   no worker runs it) then `Queue.add`;
 * - `insert_then_bullmq`: one autocommitted INSERT of a small row, then `Queue.add`: PostgreSQL's
 *   commit alone.
 *
 * Prints one JSON line: each case's p50 and p90 (ms), the part until its submit returned, and the
 * ratios to BullMQ. Run: `BENCH_PICKUP_SAMPLES=300 npx tsx --conditions=genjobs-source
 * bench/bullmqPickupFloor.ts` (PostgreSQL and Redis as for `npm run bench`).
 */
import type { ChildProcess } from "node:child_process"
import { bullmqPrefix, openBullmqQueue, removeBullmqQueue } from "./bullmq.js"
import { exited, forkTs, nextMessage } from "./lib/child.js"
import { seed, submit } from "./lib/engine.js"
import { connect, withDatabase } from "./lib/pg.js"
import { ms, percentile } from "./lib/report.js"
import { brokerUrls, deleteBrokerNames, type FromPickupWorker, newPrefix, startPickupEngine, timedProvider, type ToPickupWorker } from "./pickupLib.js"

const SAMPLES = Number(process.env.BENCH_PICKUP_SAMPLES ?? 300)
const WARMUP = 20
const PAUSE_MS = 10
/** A job not started within this long fails the run (a lost job or a dead worker, not a slow pickup). */
const SEEN_TIMEOUT_MS = 30_000
/** The longest one clean-up step may take before the next one goes. */
const STOP_TIMEOUT_MS = 10_000

const starts = new Map<string, (at: number) => void>()
/** A job seen at `at` on the clock the processes share. */
const seen = (id: string, at: number) => starts.get(id)?.(at - performance.timeOrigin)

const stops: Array<() => Promise<unknown>> = []

const startWorker = async (file: string, env: Record<string, string>): Promise<void> => {
  const child: ChildProcess = forkTs(file, env)
  stops.push(() => exited(child, () => child.send({ type: "stop" } satisfies ToPickupWorker)))
  child.on("message", (message: FromPickupWorker) => {
    if (message.type === "seen") seen(message.id, message.at)
  })
  await nextMessage(child, "ready")
}

interface Case {
  readonly key: string
  readonly add: (id: string) => Promise<unknown>
  readonly latencies: Array<number>
  readonly submits: Array<number>
}
const newCase = (key: string, add: (id: string) => Promise<unknown>): Case => ({ key, add, latencies: [], submits: [] })

let next = 0
const sampleOnce = async (c: Case) => {
  const id = `${c.key}-${next++}`
  let timer: ReturnType<typeof setTimeout> | undefined
  const started = new Promise<number>((resolve, reject) => {
    starts.set(id, resolve)
    timer = setTimeout(() => reject(new Error(`${c.key}: job ${id} did not start within ${SEEN_TIMEOUT_MS} ms`)), SEEN_TIMEOUT_MS)
  })
  const t0 = performance.now()
  await c.add(id)
  const added = performance.now()
  const t1 = await started.finally(() => clearTimeout(timer))
  starts.delete(id)
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS))
  return [t1 - t0, added - t0] as const
}

const redisUrl = brokerUrls.redis
await withDatabase("floor_engine", (engineUrl) =>
  withDatabase("floor_store", async (storeUrl, storeName) => {
    try {
      const queue = { kind: "redis", url: redisUrl } as const
      const prefix = newPrefix()
      stops.push(() => deleteBrokerNames(queue, prefix))
      const provider = timedProvider(seen)
      const engine = await startPickupEngine(engineUrl, { workers: 0, provider, queue, prefix })
      stops.push(() => engine.dispose())
      const [caller] = await seed(engine, 1)
      await startWorker("pickupWorker.ts", {
        BENCH_DATABASE_URL: engineUrl,
        BENCH_PICKUP_PREFIX: prefix,
        BENCH_PICKUP_QUEUE: JSON.stringify(queue),
        BENCH_PICKUP_BARE: "0"
      })

      const bullmq = async () => {
        const prefix = bullmqPrefix()
        const q = await openBullmqQueue(redisUrl, prefix)
        stops.push(() => removeBullmqQueue(q, redisUrl, prefix))
        await startWorker("pickupBullmqWorker.ts", { BENCH_REDIS_URL: redisUrl, BENCH_BULLMQ_PREFIX: prefix })
        return q
      }
      const plain = await bullmq()
      const afterSubmit = await bullmq()
      const afterInsert = await bullmq()

      const store = await startPickupEngine(storeUrl, { workers: 0, provider, queue: { kind: "store" }, prefix: newPrefix() })
      stops.push(() => store.dispose())
      const [storeCaller] = await seed(store, 1)
      const client = await connect(storeName)
      stops.push(() => client.end())
      await client.query("CREATE TABLE floor_jobs (id text PRIMARY KEY, account text NOT NULL, input jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())")

      const cases = [
        newCase("engine_redis", (id) => submit(engine, caller!, id)),
        newCase("bullmq", (id) => plain.add("latency", { id })),
        newCase("submit_then_bullmq", async (id) => {
          await submit(store, storeCaller!, id)
          await afterSubmit.add("latency", { id })
        }),
        newCase("insert_then_bullmq", async (id) => {
          await client.query("INSERT INTO floor_jobs (id, account, input) VALUES ($1, $2, $3)", [id, "acc", JSON.stringify({ prompt: id })])
          await afterInsert.add("latency", { id })
        })
      ]
      for (const c of cases) for (let i = 0; i < WARMUP; i++) await sampleOnce(c)
      for (let i = 0; i < SAMPLES; i++) {
        for (let k = 0; k < cases.length; k++) {
          const c = cases[(i + k) % cases.length]!
          const [latency, submitted] = await sampleOnce(c)
          c.latencies.push(latency)
          c.submits.push(submitted)
        }
      }
      const bullmqP50 = percentile(cases[1]!.latencies, 50)
      console.log(JSON.stringify({
        samples: SAMPLES,
        ...Object.fromEntries(cases.map((c) => [c.key, {
          p50: ms(percentile(c.latencies, 50)),
          p90: ms(percentile(c.latencies, 90)),
          submitP50: ms(percentile(c.submits, 50)),
          ratioToBullmq: ms(percentile(c.latencies, 50) / bullmqP50)
        }]))
      }))
    } finally {
      // Each clean-up step bounded: on a loaded machine one was seen to hang after the figures
      // were printed, with the BullMQ queues' three Redis connections still open.
      for (const stop of stops.reverse()) {
        let timer: ReturnType<typeof setTimeout> | undefined
        await Promise.race([stop(), new Promise((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS)))])
          .catch((error: unknown) => console.error(error))
          .finally(() => clearTimeout(timer))
      }
    }
  }))
process.exit(0)
