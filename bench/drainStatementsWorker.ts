/**
 * A worker process of queue_drain's statements floor (queueDrain.ts `statementsFloorSide`): the
 * engine's own drain statements (lib/drainTexts.ts: its claim in the queue's order, then its
 * ending of the held jobs with the next claim in one statement, as `finishHeldAndClaim` sends
 * them) written bare with node-postgres, nothing of the engine around them: no runtime, no
 * provider call, no lease keeper, no hints. BENCH_DRAIN_FLOOR_LANES connections per process each
 * loop "end what I hold and claim the next BENCH_DRAIN_FLOOR_BATCH" until a claim finds nothing
 * (the defaults in lib/env.ts).
 * Started on `go`, so the clock includes its connections, as the other sides include their start.
 *
 * What it answers: how fast PostgreSQL on this machine drains the engine's jobs when nothing
 * but the engine's writes is paid, the ceiling of any worker sending them.
 */
import pg from "pg"
import { serveParent } from "./lib/child.js"
import { claimText, combinedText, endingsOf, MAX_ATTEMPTS } from "./lib/drainTexts.js"

// The bench's stdout carries its JSON lines only.
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write

type Row = { readonly id: string; readonly lease_owner: string; readonly ended_row?: boolean }

const lanes = Number(process.env.BENCH_DRAIN_FLOOR_LANES)
const batch = Number(process.env.BENCH_DRAIN_FLOOR_BATCH)
const clients: Array<pg.Client> = []

/** Ends what it holds and claims the next batch, until a claim finds nothing; each ending must write every job it held. */
const lane = async (client: pg.Client, owner: string) => {
  let held = (await client.query<Row>({ name: "claim", text: claimText, values: [MAX_ATTEMPTS, batch, Date.now(), owner] })).rows
  while (held.length > 0) {
    const rows = (await client.query<Row>({
      name: "combined",
      text: combinedText,
      values: [endingsOf(held), MAX_ATTEMPTS, batch, Date.now(), owner]
    })).rows
    const ended = rows.filter((row) => row.ended_row).length
    if (ended !== held.length) throw new Error(`statements floor: ${ended} of ${held.length} held jobs ended`)
    held = rows.filter((row) => !row.ended_row)
  }
}

serveParent({
  start: async () => {
    for (let i = 0; i < lanes; i++) {
      const client = new pg.Client({ connectionString: process.env.BENCH_DATABASE_URL })
      await client.connect()
      clients.push(client)
    }
    // The parent's clock stops on the database; a lane that fails leaves jobs behind, and says why here.
    for (const [i, client] of clients.entries()) {
      lane(client, `floor_${process.pid}_${i}`).catch((error: unknown) => {
        process.stderr.write(`statements floor lane failed: ${String(error instanceof Error ? error.stack : error)}\n`)
        process.exit(1)
      })
    }
  },
  stop: async () => {
    await Promise.all(clients.map((client) => client.end()))
  }
})
