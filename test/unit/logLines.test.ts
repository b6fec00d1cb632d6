import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import { flushLogLines, layerLogger, makeLineBatch } from "../../src/observability/logger.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const LOGGER = fileURLToPath(new URL("../../src/observability/logger.ts", import.meta.url))

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

afterEach(() => {
  vi.restoreAllMocks()
})

/** A script run in a Node process of its own (tsx, so it imports the logger's source), and what it printed. */
const runScript = (script: string) => {
  const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 30_000
  })
  return { stdout: run.stdout, status: run.status }
}

describe("log lines written a turn at a time", () => {
  it("writes the lines of one turn in one write, in the order they were logged, and the next turn's apart", async () => {
    const writes: Array<string> = []
    const batch = makeLineBatch((text) => writes.push(text))
    batch.write("a")
    batch.write("b")
    batch.write("c")
    expect(writes).toEqual([])
    await nextTurn()
    expect(writes).toEqual(["a\nb\nc"])
    batch.write("d")
    await nextTurn()
    expect(writes).toEqual(["a\nb\nc", "d"])
  })

  it("writes what it holds at flush, and nothing when it holds nothing", async () => {
    const writes: Array<string> = []
    const batch = makeLineBatch((text) => writes.push(text))
    batch.flush()
    batch.write("a")
    batch.flush()
    expect(writes).toEqual(["a"])
    batch.write("b")
    await nextTurn()
    await nextTurn()
    expect(writes).toEqual(["a", "b"])
  })

  it("writes the lines it holds when the process exits, by process.exit or an uncaught exception", () => {
    for (const ending of ["process.exit(3)", "throw new Error(\"crash\")"]) {
      const { status, stdout } = runScript(
        `const { makeLineBatch } = await import(${JSON.stringify(LOGGER)})
         const batch = makeLineBatch((text) => process.stdout.write(text + "\\n"))
         batch.write("first")
         batch.write("second")
         ${ending}`
      )
      expect(status).not.toBe(0)
      expect(stdout).toBe("first\nsecond\n")
    }
  })

  it("the default logger: lines of a turn in one console.log, an API key cut to its prefix, all out when its layer is released", async () => {
    const printed = vi.spyOn(console, "log").mockImplementation(() => {})
    const secret = "gjk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    await Effect.runPromise(
      Effect.gen(function*() {
        yield* Effect.logInfo("one", { header: `Bearer ${secret}` })
        yield* Effect.logInfo("two")
        yield* Effect.logDebug("below the level")
      }).pipe(Effect.provide(layerLogger({ format: "json", level: "info" })))
    )
    // Released with the run's layer: written before the run's promise settles, without waiting for the turn's end.
    expect(printed).toHaveBeenCalledTimes(1)
    const lines = String(printed.mock.calls[0]![0]).split("\n").map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines.map((line) => line["msg"])).toEqual(["one", "two"])
    expect(lines[0]!["header"]).toBe("Bearer gjk_[redacted]")
    expect(printed.mock.calls.flat().join("\n")).not.toContain(secret)
    flushLogLines()
    expect(printed).toHaveBeenCalledTimes(1)
  })
})
