/**
 * graphile-worker, the reference of the queue figures, driven the way its own perfTest and
 * latencyTest drive it: schema from its migrations, jobs added with `add_jobs` in batches. The
 * figures run it in two configurations (GraphileConfigName): its defaults, and its best published
 * configuration, the batching of its performance docs (https://worker.graphile.org/docs/performance#batching).
 */
import { EventEmitter } from "node:events"
import { Logger, run, runMigrations, type Runner, type RunnerOptions, type TaskList, type WorkerEvents } from "graphile-worker"
import pg from "pg"

/** graphile-worker logs every job start at info level; the bench's stdout is for JSON lines. */
export const quietLogger = new Logger(() => (level, message) => {
  if (level === "error") process.stderr.write(`[graphile-worker] ${message}\n`)
})

/**
 * - `unbatched`: its defaults, as perfTest runs it: each worker fetches (and locks) its own next
 *   job, each completion is its own statement.
 * - `batched`: its best published configuration: a local queue of 500 (the pool fetches and locks
 *   up to 500 jobs at once and hands them to its workers) and completions and failures batched
 *   (`completeJobBatchDelay: 0`, `failJobBatchDelay: 0`: the ones asked for while one batch is on
 *   its way go together in the next). Those are preset options (`preset.worker`); `run()` has no
 *   top-level option for them.
 */
export type GraphileConfigName = "unbatched" | "batched"

export const GRAPHILE_LOCAL_QUEUE_SIZE = 500

/** What each configuration is, for the figures' `referenceIs` and params. */
export const graphileConfigLabel: Record<GraphileConfigName, string> = {
  unbatched: "no local queue, unbatched completions (its defaults)",
  batched: `localQueue.size ${GRAPHILE_LOCAL_QUEUE_SIZE}, completeJobBatchDelay 0, failJobBatchDelay 0`
}

const presets: Record<GraphileConfigName, RunnerOptions> = {
  unbatched: {},
  batched: {
    preset: {
      worker: { localQueue: { size: GRAPHILE_LOCAL_QUEUE_SIZE }, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
    }
  }
}

/**
 * Starts a graphile-worker runner in configuration `config` and checks that the configuration
 * took effect: the options graphile-worker's pool reads (its resolved preset, seen in the
 * `pool:create` event) must be the configuration's, and a local queue must have been made exactly
 * when one is asked for. A misspelt or misplaced option would otherwise be silently ignored.
 */
export const runGraphile = async (
  config: GraphileConfigName,
  options: { readonly pgPool: pg.Pool; readonly concurrency: number; readonly taskList: TaskList }
): Promise<Runner> => {
  const events = new EventEmitter() as WorkerEvents
  let resolved: { localQueueSize: number; completeJobBatchDelay: number; failJobBatchDelay: number } | undefined
  let localQueues = 0
  events.on("pool:create", ({ ctx }) => {
    const worker = ctx.resolvedPreset.worker
    resolved = {
      localQueueSize: worker.localQueue?.size ?? -1,
      completeJobBatchDelay: worker.completeJobBatchDelay ?? -1,
      failJobBatchDelay: worker.failJobBatchDelay ?? -1
    }
  })
  events.on("localQueue:init", () => {
    localQueues++
  })
  const runner = await run({
    ...presets[config],
    pgPool: options.pgPool,
    concurrency: options.concurrency,
    noHandleSignals: true,
    logger: quietLogger,
    events,
    taskList: options.taskList
  })
  const expected = config === "batched"
    ? { localQueueSize: GRAPHILE_LOCAL_QUEUE_SIZE, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
    : { localQueueSize: -1, completeJobBatchDelay: -1, failJobBatchDelay: -1 }
  const expectedQueues = config === "batched" ? 1 : 0
  if (JSON.stringify(resolved) !== JSON.stringify(expected) || localQueues !== expectedQueues) {
    await runner.stop()
    throw new Error(
      `graphile-worker ${config}: expected ${JSON.stringify(expected)} and ${expectedQueues} local queue(s), ` +
        `it resolved ${JSON.stringify(resolved)} and made ${localQueues}`
    )
  }
  return runner
}

/**
 * A pool for graphile-worker that we end ourselves (the one it makes itself stays open after
 * stop()), with the error handlers it asks for, so a dropped connection is logged, not thrown.
 */
export const graphilePool = (connectionString: string, max: number): pg.Pool => {
  const pool = new pg.Pool({ connectionString, max })
  const report = (error: Error) => process.stderr.write(`[graphile-worker pool] ${error.message}\n`)
  pool.on("error", report)
  pool.on("connect", (client) => client.on("error", report))
  return pool
}

export const installGraphile = (connectionString: string) => runMigrations({ connectionString, logger: quietLogger })

/** Adds `count` no-op jobs, `batch` per `add_jobs` call, as perfTest's init.js does. */
export const addNoopJobs = async (client: pg.Client, count: number, batch = 1_000) => {
  for (let from = 0; from < count; from += batch) {
    await client.query(
      `SELECT graphile_worker.add_jobs(array_agg(ROW('noop', json_build_object('id', g), NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec))
       FROM generate_series($1::int, $2::int) g`,
      [from, Math.min(count, from + batch) - 1]
    )
  }
}

/**
 * Adds one job of `task` per id of `ids`, its payload `{ id }`, in the list's order, `batch` per
 * `add_jobs` call (graphile-worker's job ids, hence its fetch order, follow it).
 */
export const addJobsForIds = async (client: pg.Client, task: string, ids: ReadonlyArray<string>, batch = 1_000) => {
  for (let from = 0; from < ids.length; from += batch) {
    await client.query(
      `SELECT graphile_worker.add_jobs(array_agg(ROW($1::text, json_build_object('id', u.id), NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
         ORDER BY u.n))
       FROM unnest($2::text[]) WITH ORDINALITY AS u(id, n)`,
      [task, ids.slice(from, from + batch)]
    )
  }
}

/**
 * Whether graphile-worker holds no job any more (it deletes a job once its task succeeds): an
 * existence check, as the engine's side polls (queueDrain.ts, `engineDrained`).
 */
export const graphileDrained = async (client: pg.Client): Promise<boolean> =>
  (await client.query("SELECT NOT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS done")).rows[0].done === true

/** Jobs whose task failed at least once: a no-op task never should. */
export const graphileJobsFailed = async (client: pg.Client) =>
  Number((await client.query("SELECT count(*) AS n FROM graphile_worker._private_jobs WHERE last_error IS NOT NULL")).rows[0].n)
