import { SqlError } from "@effect/sql"
import { Cause, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { storeErrors } from "../../adapters/sql/rows.js"
import { StoreError } from "../../src/domain/errors.js"

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromiseExit(effect)

describe("storeErrors: what leaves the SQL adapters when the database fails", () => {
  it("a failed statement is a StoreError", async () => {
    const exit = await run(Effect.fail(new SqlError.SqlError({ message: "x" })).pipe(storeErrors("read job")))
    expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause).pipe((o) => o._tag === "Some" && o.value instanceof StoreError)).toBe(true)
  })

  it("a SqlError defect (withTransaction dies when COMMIT or ROLLBACK fails on a terminated connection) is a StoreError, so the API answers 503", async () => {
    const exit = await run(Effect.die(new SqlError.SqlError({ message: "Connection terminated" })).pipe(storeErrors("transaction")))
    expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause).pipe((o) => o._tag === "Some" && o.value instanceof StoreError)).toBe(true)
  })

  it("any other defect stays a defect", async () => {
    const exit = await run(Effect.die(new Error("bug")).pipe(storeErrors("transaction")))
    expect(Exit.isFailure(exit) && Cause.dieOption(exit.cause)._tag === "Some").toBe(true)
  })
})
