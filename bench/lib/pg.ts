import { randomBytes } from "node:crypto"
import pg from "pg"
import { processCpuMs } from "./cpu.js"
import { settings } from "./env.js"

/** A client on an existing database of the bench's server; the caller ends it. */
export const connect = async (database: string): Promise<pg.Client> => {
  const client = new pg.Client({ connectionString: `${settings.pgUrl}/${database}` })
  await client.connect()
  return client
}

/**
 * Runs `body` with the URL of a fresh database named `genjobs_bench_<label>_<random>`, dropped
 * afterwards (also on failure), so runs never see each other's rows and nothing else is touched.
 */
export const withDatabase = async <A>(label: string, body: (url: string, name: string) => Promise<A>): Promise<A> => {
  const name = `genjobs_bench_${label}_${randomBytes(4).toString("hex")}`
  const admin = await connect("postgres")
  try {
    await admin.query(`CREATE DATABASE ${name}`)
    try {
      return await body(`${settings.pgUrl}/${name}`, name)
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  } finally {
    await admin.end()
  }
}

/** CPU in ms of each backend of `database` now (pg_stat_activity; this reading's own left out). */
const backendsCpu = async (database: string): Promise<Map<number, number>> => {
  const client = await connect(database)
  try {
    const { rows } = await client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    return new Map(rows.map(({ pid }) => [pid, processCpuMs(pid)]))
  } finally {
    await client.end()
  }
}

/**
 * The database's own backends' CPU per request (or job): what a machine shared with other
 * PostgreSQL users cannot skew. A backend that starts during the run counts from 0; one gone by
 * its end is lost.
 */
export const ownDatabaseCpu = async (database: string) => {
  const before = await backendsCpu(database)
  return async (requests: number): Promise<number> => {
    const after = await backendsCpu(database)
    let ms = 0
    for (const [pid, now] of after) ms += now - (before.get(pid) ?? 0)
    return Math.round((ms * 1000) / Math.max(1, requests))
  }
}

/** Resolves once `probe` returns true, checking every `everyMs`; fails after `timeoutMs`. */
export const waitFor = async (what: string, probe: () => Promise<boolean>, everyMs: number, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/**
 * Copies each template job row of the `${prefix}jobs` table (in `database`) `copies` times in one
 * statement, then ANALYZEs the table: the g-th copy's id is the template's with `_<g>` (8 digits),
 * its created_at and fair_key the template's plus g times `steps.createdAt` and `steps.fairKey`
 * (negative: each copy older and earlier in the fair order). jsonb_populate_record copies
 * whatever columns the table has; LATERAL builds the record once a row, not once a column.
 *
 * The copies of an active (pending or processing) template are counted into their account's
 * `active_jobs` once, as the table's insert trigger would one by one (migration 0021): that
 * trigger is off for the copy (`session_replication_role`, as for a restore), because a million
 * updates of one account's row in one transaction each walk past the row versions the ones
 * before left, and the fill of claim_cost's million pending jobs ran for over ten minutes.
 */
export const copyJobRows = async (
  database: string,
  prefix: string,
  templates: ReadonlyArray<string>,
  copies: number,
  steps: { readonly createdAt: number; readonly fairKey: number }
): Promise<void> => {
  const client = await connect(database)
  const table = `${prefix}jobs`
  try {
    await client.query("BEGIN")
    await client.query("SET LOCAL session_replication_role = replica")
    await client.query(
      `INSERT INTO ${table}
       SELECT r.* FROM ${table} t CROSS JOIN generate_series(1, $2::int) g
       CROSS JOIN LATERAL jsonb_populate_record(NULL::${table}, to_jsonb(t) || jsonb_build_object(
         'id', t.id || '_' || lpad(g::text, 8, '0'),
         'created_at', t.created_at + g * $3::bigint,
         'fair_key', t.fair_key + g * $4::bigint)) r
       WHERE t.id = ANY($1)`,
      [templates, copies, steps.createdAt, steps.fairKey]
    )
    await client.query(
      `UPDATE ${prefix}accounts a SET active_jobs = a.active_jobs + c.n
       FROM (SELECT account_id, count(*) * $2::bigint AS n FROM ${table}
             WHERE id = ANY($1) AND status IN ('pending', 'processing') GROUP BY account_id) c
       WHERE a.id = c.account_id`,
      [templates, copies]
    )
    await client.query("COMMIT")
    await client.query(`ANALYZE ${table}`)
  } finally {
    await client.end()
  }
}
