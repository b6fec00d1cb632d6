import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { checkSqliteDriver, sqliteDriverProblem } from "../../adapters/sql/sqliteDriverCheck.js"

describe("the SQLite driver check", () => {
  it("refuses better-sqlite3 12 on Node 24, and says how to get 13", () => {
    expect(sqliteDriverProblem("24.21.0", "12.11.1")).toMatch(/better-sqlite3 12\.11\.1 aborts Node 24\.21\.0.*"overrides": \{"better-sqlite3": "\^13\.2\.0"\}/)
    expect(sqliteDriverProblem("26.1.0", "12.6.2")).toBeDefined()
  })

  it("refuses Node 20 with better-sqlite3 13, which crashes there, naming the Node it needs", () => {
    expect(sqliteDriverProblem("20.20.2", "13.2.0")).toMatch(/Node 20\.20\.2 is not supported: genjobs needs Node 22 or newer/)
  })

  it("takes better-sqlite3 13 on Node 22 and 24, and 12 on Node 22", () => {
    expect(sqliteDriverProblem("24.21.0", "13.2.0")).toBeUndefined()
    expect(sqliteDriverProblem("22.23.3", "13.2.0")).toBeUndefined()
    expect(sqliteDriverProblem("22.23.3", "12.11.1")).toBeUndefined()
  })

  it("passes with the driver this package installs", () => {
    expect(Exit.isSuccess(Effect.runSyncExit(checkSqliteDriver))).toBe(true)
  })
})
