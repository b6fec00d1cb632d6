import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { checkSqliteDriver, sqliteDriverProblem } from "../../adapters/sql/sqliteDriverCheck.js"

describe("the SQLite driver check", () => {
  it("refuses a Node without node:sqlite or its busy timeout, naming the Node it needs", () => {
    expect(sqliteDriverProblem("20.20.2")).toMatch(/^Node 20\.20\.2 is not supported: the SQLite store needs Node 22\.16 or newer/)
    expect(sqliteDriverProblem("22.15.1")).toMatch(/^Node 22\.15\.1 is not supported/)
    expect(sqliteDriverProblem("22.5.0")).toBeDefined()
  })

  it("takes Node 22.16 and newer", () => {
    expect(sqliteDriverProblem("22.16.0")).toBeUndefined()
    expect(sqliteDriverProblem("22.23.5")).toBeUndefined()
    expect(sqliteDriverProblem("24.22.3")).toBeUndefined()
    expect(sqliteDriverProblem("26.1.0")).toBeUndefined()
  })

  it("passes on the Node running the tests", () => {
    expect(Exit.isSuccess(Effect.runSyncExit(checkSqliteDriver))).toBe(true)
  })
})
