import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { Statement } from "effect/sql"

/**
 * The statements `run` sends, as their texts and parameters, caught on their way out: a plan
 * test then explains what the store really runs. Whether `run` succeeds is not the question (the
 * rows a plan test seeds need not decode), so its outcome is dropped.
 */
export const sentStatements = <A, E, R>(run: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const sent: Array<readonly [string, ReadonlyArray<unknown>]> = []
    yield* Effect.exit(Effect.provideService(run, Statement.CurrentTransformer, (statement) => {
      sent.push(statement.compile())
      return Effect.succeed(statement)
    }))
    return sent
  })

/** The one statement `run` sends (sentStatements). */
export const sentStatement = <A, E, R>(run: Effect.Effect<A, E, R>) =>
  Effect.map(sentStatements(run), (sent) => {
    expect(sent).toHaveLength(1)
    return sent[0]!
  })
