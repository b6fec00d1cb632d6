/**
 * list_pages: one page of an account's job list (`Jobs.list`, what `GET /v1/jobs` calls) on
 * PostgreSQL with a million jobs of that one account, at the first page, a cursor half-way down
 * and the last page, with no filter, `status`, `modelId` and both. One job goes in through
 * Jobs.submit; the rest are copies of its row made with generate_series (as claim_cost does), four
 * to each created_at so the cursor's tie-break on id is exercised: 1 in 20 failed, the rest
 * completed; 1 in 50 of a second model (so 1 in 100 is failed and of that model). The cursor of
 * each position is read once in SQL (OFFSET) before the clock. The reference is the target.
 */
import { Effect } from "effect"
import { Jobs } from "genjobs"
import { BENCH_PROVIDER, seed, startPgEngine, submit, TABLE_PREFIX } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { connect, withDatabase } from "./lib/pg.js"
import { emit, log, ms, percentile } from "./lib/report.js"

const WARMUP = 5
const TARGET_MS = 20
const PAGE = 20
const RARE_MODEL = `${BENCH_PROVIDER}/rare`

const FILTERS = {
  all: {},
  status: { status: "failed" },
  model: { modelId: RARE_MODEL },
  status_model: { status: "failed", modelId: RARE_MODEL }
} as const

/** The job list's cursor of the row at `offset` in that filter's order (src/domain/cursor.ts's encoding). */
const cursorAt = (createdAt: string, id: string) => Buffer.from(JSON.stringify([Number(createdAt), id])).toString("base64url")

export const listPages = () =>
  withDatabase("list", async (url, name) => {
    const jobs = settings.listJobs
    const engine = await startPgEngine(url, { workers: 0 })
    try {
      const [caller] = await seed(engine, 1)
      const template = (await submit(engine, caller!, "template")).job
      log(`list_pages: copying the job to ${jobs} rows of one account`)
      const client = await connect(name)
      const table = `${TABLE_PREFIX}jobs`
      const fillStart = performance.now()
      const positions: Array<{ filter: keyof typeof FILTERS; position: string; cursor: string | undefined }> = []
      try {
        await client.query(
          `INSERT INTO ${table}
           SELECT r.* FROM ${table} t CROSS JOIN generate_series(1, $2::int) g
           CROSS JOIN LATERAL jsonb_populate_record(NULL::${table}, to_jsonb(t) || jsonb_build_object(
             'id', t.id || '_' || lpad(g::text, 8, '0'),
             'created_at', t.created_at - g / 4,
             'status', CASE WHEN g % 20 = 0 THEN 'failed' ELSE 'completed' END,
             'completed_at', t.created_at - g / 4 + 1000,
             'model', CASE WHEN g % 50 = 0 THEN $3 ELSE t.model END)) r
           WHERE t.id = $1`,
          [template.id, jobs - 1, RARE_MODEL]
        )
        await client.query(`ANALYZE ${table}`)
        for (const [filter, where] of Object.entries(FILTERS) as Array<[keyof typeof FILTERS, { status?: string; modelId?: string }]>) {
          const conditions = [`account_id = $1`]
          const params: Array<string> = [caller!.account.id]
          if (where.status !== undefined) conditions.push(`status = $${params.push(where.status)}`)
          if (where.modelId !== undefined) conditions.push(`model = $${params.push(where.modelId)}`)
          const [{ n }] = (await client.query(`SELECT COUNT(*)::int AS n FROM ${table} WHERE ${conditions.join(" AND ")}`, params)).rows
          const at = async (offset: number) => {
            const [row] = (await client.query(
              `SELECT created_at::text, id FROM ${table} WHERE ${conditions.join(" AND ")}
               ORDER BY created_at DESC, id DESC OFFSET ${offset} LIMIT 1`,
              params
            )).rows
            return cursorAt(row.created_at, row.id)
          }
          positions.push({ filter, position: "first", cursor: undefined })
          positions.push({ filter, position: "middle", cursor: await at(Math.floor(n / 2)) })
          positions.push({ filter, position: "last", cursor: await at(Math.max(0, n - PAGE - 1)) })
        }
      } finally {
        await client.end()
      }
      log(`list_pages: filled in ${Math.round((performance.now() - fillStart) / 1000)} s; ${settings.listSamples} pages each`)
      for (const { cursor, filter, position } of positions) {
        const request = { limit: PAGE, ...FILTERS[filter], ...(cursor === undefined ? {} : { cursor }) }
        const times: Array<number> = []
        let shown = 0
        for (let i = 0; i < WARMUP + settings.listSamples; i++) {
          const start = performance.now()
          const page = await engine.run(Effect.flatMap(Jobs, (j) => j.list(caller!, request)))
          const elapsed = performance.now() - start
          if (i >= WARMUP) times.push(elapsed)
          shown = page.jobs.length
        }
        if (shown === 0) throw new Error(`list_pages ${filter} ${position}: an empty page`)
        emit({
          figure: `list_pages_${filter}_${position}`,
          engine: percentile(times, 50),
          reference: TARGET_MS,
          unit: "ms per page (p50)",
          better: "lower",
          referenceIs: "the issue's target",
          target: "<= 1",
          params: { jobs, pageSize: PAGE, shown, samples: times.length, p99Ms: ms(percentile(times, 99)), ...FILTERS[filter] }
        })
      }
    } finally {
      await engine.dispose()
    }
  })
