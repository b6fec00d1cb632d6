import { randomBytes } from "node:crypto"
import pg from "pg"
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

/** Resolves once `probe` returns true, checking every `everyMs`; fails after `timeoutMs`. */
export const waitFor = async (what: string, probe: () => Promise<boolean>, everyMs: number, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
