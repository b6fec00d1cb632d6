import { Effect } from "effect"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { gunzipSync } from "node:zlib"
import { afterEach, describe, expect, it } from "vitest"
import { DEMO_PROVIDER_ID, demoCatalog, makeDemoProvider, makeEngine } from "../../entries/index.js"
import { memoryFiles } from "../../entries/memory.js"
import { sqliteStore } from "../../entries/sqlite.js"
import type { RequestId } from "../../src/domain/ids.js"
import type { Engine } from "../../src/engine.js"
import { Admin } from "../../src/services/Admin.js"
import { Auth } from "../../src/services/Auth.js"
import { Jobs } from "../../src/services/Jobs.js"
import { tempDataDir } from "../support/serverProcess.js"

/**
 * `./data/genjobs.db` as the 0.2.0 release (main 15a1505, on better-sqlite3) left it: `npm start`,
 * the demo account and its key, three jobs (one completed, one failed and refunded, one still
 * processing when the server stopped), then SIGTERM. Gzipped: 10 KB instead of 252.
 */
const RELEASE_DB = new URL("../fixtures/release-0.2.0-data.db.gz", import.meta.url)
const DEMO_KEY = "gjk_eSIXl2dPDOi3ViwWmzNI3qaPzieIHvHa3ubPUJUh8Yg"

const engines: Array<Engine> = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.dispose()))
})

const releaseDatabase = () => {
  const file = join(tempDataDir(), "genjobs.db")
  writeFileSync(file, gunzipSync(readFileSync(RELEASE_DB)))
  return file
}

const start = async (filename: string) => {
  const engine = await makeEngine({
    store: sqliteStore({ filename }),
    files: memoryFiles({ publicUrl: "http://files.test" }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    catalog: demoCatalog,
    workers: 0,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false
  })
  engines.push(engine)
  return engine
}

const demoCaller = Effect.flatMap(Auth, (auth) => auth.authenticate({ authorization: `Bearer ${DEMO_KEY}` }))

describe("a ./data database made by the 0.2.0 release (better-sqlite3), on node:sqlite", () => {
  it("opens and migrates: the demo key, its balance and its jobs are there, and it takes a submit", async () => {
    const engine = await start(releaseDatabase())
    const seen = await engine.run(Effect.gen(function*() {
      const caller = yield* demoCaller
      const jobs = yield* Jobs
      const page = yield* jobs.list(caller, {})
      const submitted = yield* jobs.submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: "again" } }, "req_release" as RequestId)
      const account = yield* (yield* Admin).getAccount(caller.account.id)
      return {
        before: caller.account.balanceMicroCents,
        jobs: page.jobs.map((job) => [job.model, job.status]),
        submitted: submitted.job.status,
        after: account.balanceMicroCents
      }
    }))
    expect(seen).toEqual({
      // $100 less the completed image (50,000) and the processing text job (10,000); the failed one was refunded.
      before: 99_940_000,
      jobs: [
        ["demo/text-gen/text-to-text", "processing"],
        ["demo/text-gen/text-to-text", "failed"],
        ["demo/image-gen/text-to-image", "completed"]
      ],
      submitted: "pending",
      after: 99_930_000
    })
  })

  it("opens again after the first start on node:sqlite, with what that start wrote", async () => {
    const file = releaseDatabase()
    const first = await start(file)
    await first.run(Effect.flatMap(demoCaller, (caller) =>
      Effect.flatMap(Jobs, (jobs) => jobs.submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: "x" } }, "req_x" as RequestId))
    ))
    await engines.pop()!.dispose()
    const again = await start(file)
    const page = await again.run(Effect.flatMap(demoCaller, (caller) => Effect.flatMap(Jobs, (jobs) => jobs.list(caller, {}))))
    expect(page.jobs.length).toBe(4)
  })
})
