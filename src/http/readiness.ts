import { Duration, Effect, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import { CatalogRepo } from "../ports/CatalogRepo.js"
import { JobQueue } from "../ports/JobQueue.js"

/**
 * How long each part may take to answer `GET /health/ready`. Under a probe's own timeout
 * (docs/operations.md suggests 3 s), and long enough that a loaded but healthy store passes.
 */
export const READINESS_TIMEOUT_MS = 2_000

export type CheckResult = "ok" | "failed" | "timed out"

/** The readiness answer: 200 when every part is ok, else 503 with the failing parts named. */
export const readinessBody = (checks: Readonly<Record<string, CheckResult>>) => {
  const failing = Object.keys(checks).filter((part) => checks[part] !== "ok")
  return {
    status: failing.length === 0 ? 200 : 503,
    body: failing.length === 0 ? { status: "ok", checks } : { status: "unavailable", failing, checks }
  }
}

/**
 * One check: `ok`, or why not. The cause goes to the log only: this route answers without
 * credentials, and a driver's message may name hosts, users and databases.
 */
const check = (part: string, probe: Effect.Effect<unknown, { readonly message: string }>): Effect.Effect<CheckResult> =>
  probe.pipe(
    Effect.timeoutOption(Duration.millis(READINESS_TIMEOUT_MS)),
    Effect.flatMap(Option.match({
      onSome: () => Effect.succeed<CheckResult>("ok"),
      onNone: () => Effect.as(Effect.logWarning(`readiness: the ${part} gave no answer within ${READINESS_TIMEOUT_MS} ms`), "timed out" as const)
    })),
    Effect.catch((error) => Effect.as(Effect.logWarning(`readiness: the ${part} is not ready`, error.message), "failed" as const))
  )

/**
 * GET /health/ready: the store answers a trivial query (its catalog revision, one row by key),
 * and the queue broker, where one is configured, answers a round trip. Without a broker the
 * store is the queue, so its check covers both.
 */
export const readiness = Effect.gen(function*() {
  const catalogs = yield* CatalogRepo
  const queue = yield* Effect.serviceOption(JobQueue)
  const ping = Option.flatMapNullishOr(queue, (q) => q.ping)
  const probes: Record<string, Effect.Effect<CheckResult>> = { store: check("store", catalogs.revision) }
  if (Option.isSome(ping)) probes["queue"] = check("queue", ping.value)
  return Effect.gen(function*() {
    const { body, status } = readinessBody(yield* Effect.all(probes, { concurrency: "unbounded" }))
    return yield* HttpServerResponse.json(body, { status, headers: { "cache-control": "no-store" } })
  })
})
