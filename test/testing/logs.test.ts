import { afterEach, describe, expect, it, vi } from "vitest"
import { makeTestEngine } from "genjobs/testing"

afterEach(() => {
  vi.restoreAllMocks()
})

/** Runs one job through a test engine and answers the lines its logger printed. */
const linesOfOneJob = async (options: Parameters<typeof makeTestEngine>[0]) => {
  const printed = vi.spyOn(console, "log").mockImplementation(() => {})
  const engine = await makeTestEngine(options)
  try {
    const account = await engine.account()
    await account.submit("test/text")
    expect(await engine.runJobs()).toBe(1)
  } finally {
    await engine.dispose()
  }
  return printed.mock.calls.map((args) => args.map(String).join(" "))
}

describe("the test engine's logs", () => {
  it("are quiet by default: a test suite's output stays its own", async () => {
    expect(await linesOfOneJob({})).toEqual([])
  })

  it("show requests and jobs when asked", async () => {
    const lines = await linesOfOneJob({ logLevel: "info" })
    expect(lines.some((line) => line.includes("http request"))).toBe(true)
    expect(lines.some((line) => line.includes("job completed"))).toBe(true)
  })
})
