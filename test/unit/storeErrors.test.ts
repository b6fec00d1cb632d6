import { Cause, Effect, Exit, Option, Result, Schema } from "effect"
import { SqlError } from "effect/sql"
import { describe, expect, it } from "vitest"
import { decodeRows, storeErrors } from "../../adapters/sql/rows.js"
import { CorruptRow, StoreError } from "../../src/domain/errors.js"

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromiseExit(effect)

describe("storeErrors: what leaves the SQL adapters when the database fails", () => {
  it("a failed statement is a StoreError", async () => {
    const exit = await run(Effect.fail(new SqlError.SqlError({ reason: new SqlError.UnknownError({ cause: new Error("x"), message: "x" }) })).pipe(storeErrors("read job")))
    expect(Exit.isFailure(exit) && Cause.findErrorOption(exit.cause).pipe((o) => Option.isSome(o) && o.value instanceof StoreError)).toBe(true)
  })

  it("a SqlError defect (withTransaction dies when COMMIT or ROLLBACK fails on a terminated connection) is a StoreError, so the API answers 503", async () => {
    const exit = await run(Effect.die(new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause: new Error("Connection terminated"), message: "Connection terminated" }) })).pipe(storeErrors("transaction")))
    expect(Exit.isFailure(exit) && Cause.findErrorOption(exit.cause).pipe((o) => Option.isSome(o) && o.value instanceof StoreError)).toBe(true)
  })

  it("any other defect stays a defect", async () => {
    const exit = await run(Effect.die(new Error("bug")).pipe(storeErrors("transaction")))
    expect(Exit.isFailure(exit) && Result.isSuccess(Cause.findDefect(exit.cause))).toBe(true)
  })

  it("a row that does not decode is a StoreError caused by a CorruptRow naming the row, not its values", async () => {
    const rows = [{ id: "job_1", status: "pending" }, { id: "job_2", status: "exploded", secret: "s3cret" }]
    const decoded = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String, status: Schema.Literal("pending") })))(rows)
    const exit = await run(decoded.pipe(storeErrors("list jobs")))
    const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
    const cause = error !== undefined && Option.isSome(error) && error.value instanceof StoreError ? error.value.cause : undefined
    expect(cause).toBeInstanceOf(CorruptRow)
    expect(cause).toMatchObject({ operation: "list jobs", rowId: "job_2" })
    expect(JSON.stringify(cause)).not.toContain("exploded")
  })
})
