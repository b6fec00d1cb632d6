import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { adminClient, allPages, connection, query } from "./client.js"
import { dollars, emit, fields, progress, report, table } from "./output.js"

const STATUSES = ["pending", "processing", "completed", "failed", "cancelled"] as const

const jobRows = (jobs: ReadonlyArray<any>) =>
  table(
    ["JOB ID", "ACCOUNT", "MODEL", "STATUS", "COST", "CREATED"],
    jobs.map((j) => [j.jobId, j.accountId, j.model, j.status, dollars(j.costMicroCents), j.createdAt])
  )

const listCommand = Command.make("list", {
  ...connection,
  account: Options.text("account").pipe(Options.withDescription("Only this account's jobs"), Options.optional),
  status: Options.choice("status", STATUSES).pipe(Options.optional),
  model: Options.text("model").pipe(Options.withDescription("A model slug"), Options.optional),
  since: Options.text("since").pipe(Options.withDescription("Created at or after this ISO 8601 time"), Options.optional),
  until: Options.text("until").pipe(Options.withDescription("Created before this ISO 8601 time"), Options.optional),
  limit: Options.integer("limit").pipe(Options.withDescription("Jobs per page (1 to 100)"), Options.withDefault(20)),
  cursor: Options.text("cursor").pipe(Options.withDescription("The next page, as the previous one named it"), Options.optional),
  all: Options.boolean("all").pipe(Options.withDescription("Every page, not just the first"))
}, (o) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const filters = {
      accountId: Option.getOrUndefined(o.account),
      status: Option.getOrUndefined(o.status),
      model: Option.getOrUndefined(o.model),
      createdFrom: Option.getOrUndefined(o.since),
      createdBefore: Option.getOrUndefined(o.until)
    }
    if (o.all) {
      const jobs = yield* allPages(client, "/admin/jobs", filters, "jobs", (n) => progress(o.json, `… ${n} jobs`))
      return yield* emit(o.json, { jobs }, () => `${jobRows(jobs)}\n${jobs.length} jobs`)
    }
    const page = yield* client.call("GET", `/admin/jobs${query({ ...filters, limit: o.limit, cursor: Option.getOrUndefined(o.cursor) })}`)
    yield* emit(o.json, page, () => `${jobRows(page.jobs)}${page.hasMore ? `\nMore: --cursor ${page.nextCursor} (or --all)` : ""}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(Command.withDescription("List jobs across accounts, newest first"))

const get = Command.make("get", { ...connection, id: Args.text({ name: "job-id" }) }, (o) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const job = yield* client.call("GET", `/admin/jobs/${encodeURIComponent(o.id)}`)
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
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(Command.withDescription("Show any job: input, outputs, error"))

export const jobs = Command.make("jobs").pipe(
  Command.withDescription("List and inspect jobs across accounts"),
  Command.withSubcommands([listCommand, get])
)
