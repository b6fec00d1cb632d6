/**
 * A worker process SIGKILLed while 1,000 generations wait on its watch list, then a new worker
 * process: all complete, 0 second starts (the fault suite's watchCrash runs it at 10,000).
 */
import { afterAll, describe, it } from "vitest"
import { faultDatabase } from "../faults/harness.js"
import { watchCrash } from "../faults/support/watchCrash.js"

const db = await faultDatabase()

describe.skipIf(db === undefined)("a worker killed with 1,000 generations on its watch list", () => {
  afterAll(async () => {
    await db?.drop()
  })

  it("resumes every watched generation after a restart: all complete, none started twice", async () => {
    await watchCrash(db!, 1_000, 60_000)
  }, 300_000)
})
