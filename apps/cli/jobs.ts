import * as Effect from "effect/Effect"
import { adminClient, allPages, query } from "./client.js"
import type { Input } from "./commandLine.js"
import type { connection, jobsList } from "./commands.js"
import { dollars, emit, fields, progress, report, table } from "./output.js"

const jobRows = (jobs: ReadonlyArray<any>) =>
  table(
    ["JOB ID", "ACCOUNT", "MODEL", "STATUS", "COST", "CREATED"],
    jobs.map((j) => [j.jobId, j.accountId, j.model, j.status, dollars(j.costMicroCents), j.createdAt])
  )

export const list = ({ options: o }: Input<typeof jobsList>) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const filters = {
      accountId: o.account,
      status: o.status,
      model: o.model,
      createdFrom: o.since,
      createdBefore: o.until
    }
    if (o.all) {
      const jobs = yield* allPages(client, "/admin/jobs", filters, "jobs", (n) => progress(o.json, `… ${n} jobs`))
      return yield* emit(o.json, { jobs }, () => `${jobRows(jobs)}\n${jobs.length} jobs`)
    }
    const page = yield* client.call("GET", `/admin/jobs${query({ ...filters, limit: o.limit, cursor: o.cursor })}`)
    yield* emit(o.json, page, () => `${jobRows(page.jobs)}${page.hasMore ? `\nMore: --cursor ${page.nextCursor} (or --all)` : ""}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))

export const get = ({ args: [id], options: o }: Input<typeof connection>) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const job = yield* client.call("GET", `/admin/jobs/${encodeURIComponent(id!)}`)
    yield* emit(o.json, job, () =>
      fields([
        ["job", job.jobId],
        ["account", job.accountId],
        ["model", `${job.model} (${job.version})`],
        ["status", `${job.status} (${job.progress}%)`],
        ["cost", `${dollars(job.costMicroCents)} (${job.costMicroCents} micro-cents)`],
        ["attempts", String(job.attempts)],
        ["created", job.createdAt],
        ["started", job.startedAt ?? "-"],
        ["completed", job.completedAt ?? "-"],
        ["input", JSON.stringify(job.input)],
        ...(job.outputs ?? []).map((out: any, i: number) => [`output ${i + 1}`, `${out.type} ${out.url}`] as const),
        ...(job.error === null ? [] : [["error", `${job.error.code}: ${job.error.message}`] as const]),
        ["webhook", job.webhookUrl ?? "-"],
        ["request", job.requestId]
      ]))
  }).pipe(Effect.catchTag("CliError", report(o.json)))
