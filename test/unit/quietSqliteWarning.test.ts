import { afterAll, describe, expect, it } from "vitest"

// The entries' filter, installed as they install it (imported for its effect on `process`).
const original = process.emitWarning
await import("../../apps/quietSqliteWarning.js")
afterAll(() => {
  process.emitWarning = original
})

/** The warnings `emit` makes Node raise, by name and message (Node emits them on the next tick). */
const raised = async (emit: () => void) => {
  const seen: Array<string> = []
  const listener = (warning: Error) => seen.push(`${warning.name}: ${warning.message}`)
  process.on("warning", listener)
  try {
    emit()
    await new Promise((resolve) => setImmediate(resolve))
    return seen
  } finally {
    process.off("warning", listener)
  }
}

describe("the entries' filter for node:sqlite's experimental warning on Node 22", () => {
  it("drops that one warning, however it is emitted", async () => {
    const sqlite = "SQLite is an experimental feature and might change at any time"
    expect(await raised(() => {
      process.emitWarning(sqlite, "ExperimentalWarning")
      process.emitWarning(sqlite, { type: "ExperimentalWarning" })
      process.emitWarning(Object.assign(new Error(sqlite), { name: "ExperimentalWarning" }))
    })).toEqual([])
  })

  it("passes every other warning on, experimental ones included", async () => {
    // Not "VM Modules is an experimental feature...": vitest's workers (--require
    // vitest/suppress-warnings.cjs) swallow that one and a few others before any listener sees it.
    expect(await raised(() => {
      process.emitWarning("WASI is an experimental feature and might change at any time", "ExperimentalWarning")
      process.emitWarning("SQLite is an experimental feature and might change at any time", "DeprecationWarning")
      process.emitWarning("something else")
    })).toEqual([
      "ExperimentalWarning: WASI is an experimental feature and might change at any time",
      "DeprecationWarning: SQLite is an experimental feature and might change at any time",
      "Warning: something else"
    ])
  })
})
