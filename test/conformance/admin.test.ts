import { describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { runAdminConformance } from "./adminSuite.js"

runAdminConformance("memory", () => layerMemoryStores, { transactional: false })

const dir = mkdtempSync(join(tmpdir(), "genjobs-admin-"))
let n = 0
runAdminConformance("sqlite, prefix acme_", () => layerSqlite({ filename: join(dir, `admin-${++n}.db`), tablePrefix: "acme_" }), {
  transactional: true
})

if ((await freshPostgresUrl()) === undefined) {
  describe.skip("postgres (server not reachable)", () => {
    it("runs the admin conformance suite", () => undefined)
  })
} else {
  runAdminConformance(
    "postgres",
    () => Layer.unwrap(Effect.promise(freshPostgresUrl).pipe(Effect.map((url) => layerPostgres({ url: Redacted.make(url!) })))),
    { transactional: true }
  )
}
