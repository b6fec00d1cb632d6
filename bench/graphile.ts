/**
 * graphile-worker, the reference of the queue figures, driven the way its own perfTest and
 * latencyTest drive it: schema from its migrations, jobs added with `add_jobs` in batches.
 */
import { Logger, runMigrations } from "graphile-worker"
import pg from "pg"

/** graphile-worker logs every job start at info level; the bench's stdout is for JSON lines. */
export const quietLogger = new Logger(() => (level, message) => {
  if (level === "error") process.stderr.write(`[graphile-worker] ${message}\n`)
})

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

/** Jobs graphile-worker still holds: it deletes a job once its task succeeds. */
export const graphileJobsLeft = async (client: pg.Client) =>
  Number((await client.query("SELECT count(*) AS n FROM graphile_worker._private_jobs")).rows[0].n)

/** Jobs whose task failed at least once: a no-op task never should. */
export const graphileJobsFailed = async (client: pg.Client) =>
  Number((await client.query("SELECT count(*) AS n FROM graphile_worker._private_jobs WHERE last_error IS NOT NULL")).rows[0].n)
