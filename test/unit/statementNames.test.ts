import { describe, expect, it } from "vitest"
import { makeStatementNames } from "../../adapters/sql/preparedStatements.js"

describe("names of prepared statements", () => {
  it("names a text on its second run and keeps that name", () => {
    const names = makeStatementNames()
    expect(names.nameOf("SELECT $1")).toBeUndefined()
    const name = names.nameOf("SELECT $1")
    expect(name).toBeDefined()
    expect(names.nameOf("SELECT $1")).toBe(name)
    // Another text gets a name of its own.
    names.nameOf("SELECT $1 + 1")
    expect(names.nameOf("SELECT $1 + 1")).not.toBe(name)
  })

  it("names at most `capacity` texts; the rest run unnamed", () => {
    const names = makeStatementNames(2)
    for (const text of ["a", "b", "c"]) names.nameOf(text)
    expect(names.nameOf("a")).toBeDefined()
    expect(names.nameOf("b")).toBeDefined()
    expect(names.nameOf("c")).toBeUndefined()
    expect(names.nameOf("c")).toBeUndefined()
  })

  it("gives a stale statement's text a new name, so each connection prepares it afresh", () => {
    const names = makeStatementNames()
    names.nameOf("SELECT * FROM t WHERE id = $1")
    const old = names.nameOf("SELECT * FROM t WHERE id = $1")
    names.renew("SELECT * FROM t WHERE id = $1")
    const renewed = names.nameOf("SELECT * FROM t WHERE id = $1")
    expect(renewed).toBeDefined()
    expect(renewed).not.toBe(old)
  })

  it("a flood of one-off texts does not grow its memory without bound", () => {
    const names = makeStatementNames(4)
    names.nameOf("recurring")
    for (let i = 0; i < 100; i++) names.nameOf(`one-off ${i}`)
    // The first sighting was forgotten in the flood: the text is named one run later, not never.
    expect(names.nameOf("recurring")).toBeUndefined()
    expect(names.nameOf("recurring")).toBeDefined()
  })
})
