import { expect, test } from "vitest"
import { makeTestEngine } from "genjobs/testing"

test("a job runs to completion", async () => {
  const engine = await makeTestEngine()
  const alice = await engine.account({ credits: 10 })
  const { jobId } = await alice.submit("test/image", { prompt: "a fox" })
  await engine.runJobs()
  expect(await alice.get(jobId)).toMatchObject({ status: "completed", progress: 100 })
  await engine.dispose()
})
