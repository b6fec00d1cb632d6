import type { SqlClient, Statement } from "effect/sql"

/** Compiled in place of a bound value: where it lands in the bind order tells whose value goes there. */
class StandIn {
  constructor(readonly read: (binds: unknown) => unknown) {}
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype

/** `binds` with every value (each leaf of its plain objects) replaced by the StandIn that reads it back. */
const standInsOf = (binds: Record<string, unknown>, read: (binds: unknown) => unknown): Record<string, unknown> => {
  const standIns: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(binds)) {
    const at = (from: unknown) => (read(from) as Record<string, unknown>)[key]
    standIns[key] = isPlainObject(value) ? standInsOf(value, at) : new StandIn(at)
  }
  return standIns
}

/**
 * A statement whose text is compiled once: `build` writes it from its fragments, placing each
 * value of `binds` and computing none (no branch, arithmetic or call on a value: those go into
 * `binds` before). Its first call compiles `build` over stand-ins of the values, which gives the
 * text and, for each bound parameter, the value of `binds` it takes; every call then lists those
 * values and runs the text. So the bind order comes from the fragments themselves, and only
 * values are made per call: building and compiling a submit's fragments was about 30 µs of
 * each submit (docs/benchmarks.md, "The submit's statement"). A value the fragments bind that
 * is not from `binds` (a constant) is bound as it is.
 */
export const compiledOnce = <B extends Record<string, unknown>, Row extends object = Record<string, unknown>>(
  sql: SqlClient.SqlClient,
  build: (binds: B) => Statement.Statement<unknown>
) => {
  let compiled: { readonly text: string; readonly reads: ReadonlyArray<(binds: unknown) => unknown> } | undefined
  return (binds: B) => {
    if (compiled === undefined) {
      const [text, params] = build(standInsOf(binds, (from) => from) as B).compile()
      compiled = { text, reads: params.map((param) => param instanceof StandIn ? param.read : () => param) }
    }
    const values = new Array<unknown>(compiled.reads.length)
    for (let i = 0; i < values.length; i++) values[i] = compiled.reads[i]!(binds)
    return sql.unsafe<Row>(compiled.text, values)
  }
}
