import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { MAX_TABLE_PREFIX_LENGTH } from "../../adapters/sql/tables.js"

const dir = mkdtempSync(join(tmpdir(), "genjobs-prefix-"))
let n = 0

describe("sqlite: table prefix", () => {
  it.live("refuses a prefix that is not a short lower-case identifier, with the reason", () =>
    Effect.gen(function*() {
      for (const bad of ["", "Genjobs_", "gen-jobs_", "1st_", "gen jobs", "a".repeat(MAX_TABLE_PREFIX_LENGTH + 1)]) {
        const exit = yield* Effect.exit(Layer.build(layerSqlite({ filename: join(dir, `bad-${++n}.db`), tablePrefix: bad })).pipe(Effect.scoped))
        const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined
        expect(error).toMatchObject({ _tag: "TablePrefixError", message: expect.stringContaining(`Invalid table prefix ${JSON.stringify(bad)}`) })
      }
    }))
})
