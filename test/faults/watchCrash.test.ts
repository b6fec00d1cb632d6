/**
 * Issue 34's crash with a full watch list: a worker process SIGKILLed while 10,000 generations
 * wait at the Replicate simulator, then a new worker: all complete, 0 second starts.
 * test/services/watchCrash.test.ts runs the same at 1,000 in `npm test`.
 */
import { afterAll, describe, it } from "vitest"
import { faultDatabase } from "./harness.js"
import { watchCrash } from "./support/watchCrash.js"

const db = await faultDatabase()

describe.skipIf(db === undefined)("a worker killed with 10,000 generations on its watch list", () => {
  afterAll(async () => {
    await db?.drop()
  })

  it("resumes every watched generation after a restart: all complete, none started twice", async () => {
    await watchCrash(db!, 10_000, 180_000)
  }, 900_000)
})
