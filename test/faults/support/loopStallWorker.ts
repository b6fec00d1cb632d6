/**
 * The engine process of loopStall.test.ts. Environment: STORE ("sqlite:<file>" or
 * "postgres:<url>"), REPLICATE_URL, REPLICATE_TOKEN, JOBS, STALL_AFTER_STARTS, STALL_MS,
 * REQUEST_TIMEOUT_MS, POLL_MS.
 *
 * It loads a one-model catalog (a Replicate text model, no rate limits), funds an account and
 * submits JOBS jobs with an engine that runs no workers (prints "submitted"), then starts an
 * engine with JOBS workers on the same store, so that every job is in flight at once (prints
 * "worker ready"). Once its worker has asked Replicate for STALL_AFTER_STARTS starts, it lets the
 * requests go out and then holds the event loop STALL_MS in a busy-wait, as a process busy with
 * other work would: answers arrive meanwhile. It prints "stalled {json}" (the starts in flight
 * then) and, every second, "blocks [...]": the event loop's blocks over 50 ms, the stall left out.
 */
import { Effect, Layer, Redacted, References } from "effect"
import { Admin, Auth, Catalog, type CatalogDocument, type GenerationProvider, Jobs, makeEngine } from "genjobs"
import { memoryFiles } from "genjobs/memory"
import { postgresStore } from "genjobs/postgres"
import { REPLICATE_PROVIDER_ID, replicateProvider } from "genjobs/providers/replicate"
import { sqliteStore } from "genjobs/sqlite"
import { testCatalog } from "genjobs/testing"
import { envInt, envString } from "./replicateEngine.js"

type RequestId = Parameters<Jobs["Service"]["submit"]>[2]

const jobs = envInt("JOBS")
const stallAfter = envInt("STALL_AFTER_STARTS")
const stallMs = envInt("STALL_MS")
const where = envString("STORE")
const store = () =>
  where.startsWith("sqlite:")
    ? sqliteStore({ filename: where.slice("sqlite:".length) })
    : postgresStore({ url: Redacted.make(where.slice("postgres:".length)) })

const text = testCatalog.models.find((m) => m.category === "text")!
/** One text model at Replicate (the simulator answers a text model's prediction inline: no file to download). */
const catalog: CatalogDocument = {
  ...testCatalog,
  providers: [{ ...testCatalog.providers[0]!, id: REPLICATE_PROVIDER_ID, name: "Replicate (simulated)" }],
  models: [{
    ...text,
    slug: "replicate/text",
    providerId: REPLICATE_PROVIDER_ID,
    versions: text.versions.map((v) => ({ ...v, provider: { model: "acme/text-gen" } }))
  }]
}

const replicate = replicateProvider({
  apiToken: envString("REPLICATE_TOKEN"),
  baseUrl: envString("REPLICATE_URL"),
  pollIntervalMs: envInt("POLL_MS"),
  requestTimeoutMs: envInt("REQUEST_TIMEOUT_MS")
})

const common = {
  files: memoryFiles({ publicUrl: "http://files.invalid" }),
  webhookDispatchers: 0,
  uploadSweeper: false,
  retentionSweeper: false,
  observability: Layer.succeed(References.MinimumLogLevel, "Warn")
} as const

const submitter = await makeEngine({ ...common, store: store(), providers: { [REPLICATE_PROVIDER_ID]: replicate }, workers: 0 })
await submitter.run(Effect.gen(function*() {
  yield* (yield* Catalog).replace(catalog)
  const admin = yield* Admin
  const account = yield* admin.createAccount({
    name: "stall",
    creditsMicroCents: 1_000_000_000_000,
    maxConcurrentJobs: 1_000_000,
    segments: [],
    allowedModels: [],
    discounts: []
  })
  const key = yield* admin.createKey(account.id, { name: "stall", scopes: [], allowedIPs: [], expiresAt: null })
  const caller = yield* (yield* Auth).authenticate({ authorization: `Bearer ${key.secret}` })
  const submit = yield* Jobs
  yield* Effect.forEach(
    Array.from({ length: jobs }, (_, i) => i),
    (i) => submit.submit(caller, { model: "replicate/text", input: { prompt: `job ${i}` } }, `req_stall_${i}` as RequestId),
    { concurrency: 16, discard: true }
  )
}))
await submitter.dispose()
console.log("submitted")

/** Blocks of the event loop over 50 ms, seen as late ticks of a 10 ms interval; the stall itself is left out. */
const blocks: Array<number> = []
let stalling = false
let lastTick = performance.now()
setInterval(() => {
  const now = performance.now()
  if (!stalling && now - lastTick - 10 > 50) blocks.push(Math.round(now - lastTick - 10))
  stalling = false
  lastTick = now
}, 10).unref()
setInterval(() => console.log(`blocks ${JSON.stringify(blocks)}`), 1_000).unref()

let asked = 0
let answered = 0
const stall = () => {
  const inFlight = asked - answered
  stalling = true
  const until = performance.now() + stallMs
  while (performance.now() < until) {
    // The busy-wait is the fault: the process does nothing else until it ends.
  }
  console.log(`stalled ${JSON.stringify({ inFlight, asked })}`)
}
/** Replicate as the worker calls it: the stall comes while the starts asked so far are in flight. */
const stalled: GenerationProvider = {
  ...replicate,
  start: (request) =>
    Effect.suspend(() => {
      // Long enough after the last of these starts that their requests are written and answered.
      if (++asked === stallAfter) setTimeout(stall, 200)
      return Effect.ensuring(replicate.start(request), Effect.sync(() => answered++))
    })
}

const engine = await makeEngine({
  ...common,
  store: store(),
  providers: { [REPLICATE_PROVIDER_ID]: stalled },
  workers: jobs,
  // The engine's own wake-up poll: with SQLite in another process, no signal reaches this one.
  settings: { pollIntervalMs: 200 }
})
process.once("SIGTERM", () => void engine.dispose().then(() => process.exit(0)))
console.log("worker ready")
