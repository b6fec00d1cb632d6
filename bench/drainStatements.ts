/**
 * What a PostgreSQL drain's store statements cost, without the worker (a measuring aid, not a
 * figure): BENCH_DRAIN_JOBS jobs submitted as queue_drain submits them, then drained on one
 * connection by the drain's own statements in a loop, claim B and end those B, and the CPU of
 * that connection's backend (from /proc, so the server must run on this machine) and the wall
 * time per job printed, one JSON line a run. Two shapes, alternated in pairs, each on a fresh copy
 * of the same database:
 *
 * - `separate`: today's drain, a claim statement (adapters/sql/queue/claims.ts) then an ending
 *   statement (`finishHeldWithoutWebhook`, adapters/sql/queue/held.ts), two round trips and two
 *   commits per B jobs;
 * - `combined`: the ending of the B held jobs and the claim of the next B in one statement, one
 *   round trip and one commit: the shape a worker could send when a completion batch frees the
 *   fibers it is about to claim for (docs/decisions.md, "PostgreSQL drain: the store side").
 *
 * The statements are copies of the adapters' texts at the commit that added this file (lease clock
 * from the database, no excluded versions, no webhook URL, no job-event hints), kept in
 * lib/drainTexts.ts: a change there is not followed here. Run: `BENCH_DRAIN_JOBS=8000 npx tsx --conditions=genjobs-source bench/drainStatements.ts`
 * (BENCH_DRAIN_STATEMENT_BATCH, default 8: B; BENCH_DRAIN_STATEMENT_PAIRS, default 3).
 */
import { readFileSync } from "node:fs"
import { claimText, combinedText, endingsOf, endText, MAX_ATTEMPTS } from "./lib/drainTexts.js"
import { seed, submitMany } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { connect, withDatabase } from "./lib/pg.js"
import { startDrainEngine } from "./queueDrain.js"

const batch = Number(process.env.BENCH_DRAIN_STATEMENT_BATCH ?? 8)
const pairs = Number(process.env.BENCH_DRAIN_STATEMENT_PAIRS ?? 3)

const ticks = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return Number(f[11]) + Number(f[12])
}

type Row = { readonly id: string; readonly lease_owner: string; readonly ended_row?: boolean }

const drainOnce = async (database: string, shape: "separate" | "combined") => {
  const client = await connect(database)
  try {
    const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number
    let ended = 0
    let statements = 0
    const before = ticks(pid)
    const start = performance.now()
    let held = (await client.query<Row>({ name: "claim", text: claimText, values: [MAX_ATTEMPTS, batch, Date.now(), "w0"] })).rows
    statements++
    for (let round = 1; held.length > 0; round++) {
      if (shape === "separate") {
        ended += (await client.query({ name: "end", text: endText, values: [endingsOf(held)] })).rowCount ?? 0
        held = (await client.query<Row>({ name: "claim", text: claimText, values: [MAX_ATTEMPTS, batch, Date.now(), `w${round}`] })).rows
        statements += 2
      } else {
        const rows = (await client.query<Row>({ name: "combined", text: combinedText, values: [endingsOf(held), MAX_ATTEMPTS, batch, Date.now(), `w${round}`] })).rows
        ended += rows.filter((row) => row.ended_row).length
        held = rows.filter((row) => !row.ended_row)
        statements++
      }
    }
    const wallMs = performance.now() - start
    return {
      shape,
      batch,
      jobs: ended,
      statementsPerJob: Math.round((statements / ended) * 1000) / 1000,
      backendCpuUsPerJob: Math.round(((ticks(pid) - before) * 10_000) / ended),
      wallUsPerJob: Math.round((wallMs * 1000) / ended)
    }
  } finally {
    await client.end()
  }
}

await withDatabase("drainstmts", async (url, template) => {
  const engine = await startDrainEngine(url, 0, { kind: "store" })
  try {
    await submitMany(engine, await seed(engine, settings.drainAccounts), settings.drainJobs, 16)
  } finally {
    await engine.dispose()
  }
  const admin = await connect("postgres")
  try {
    for (let pair = 0; pair < pairs; pair++) {
      for (const shape of ["separate", "combined"] as const) {
        const copy = `${template}_${shape}`
        await admin.query(`CREATE DATABASE ${copy} TEMPLATE ${template}`)
        try {
          console.log(JSON.stringify({ pair: pair + 1, ...(await drainOnce(copy, shape)) }))
        } finally {
          await admin.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`)
        }
      }
    }
  } finally {
    await admin.end()
  }
})
