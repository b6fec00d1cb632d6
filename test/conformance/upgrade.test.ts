import { PgClient } from "@effect/sql-pg"
import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { runUpgradeSuite } from "./upgradeSuite.js"

const dir = mkdtempSync(join(tmpdir(), "genjobs-upgrade-"))
let n = 0

runUpgradeSuite("sqlite", async () => {
  const filename = join(dir, `db-${++n}.db`)
  return {
    client: SqliteClient.layer({ filename }),
    engine: (tablePrefix) => layerSqlite({ filename, tablePrefix })
  }
})

// Under CI freshPostgresUrl throws when the server is missing: the suite fails, never skips.
if ((await freshPostgresUrl()) === undefined) {
  describe.skip("postgres upgrade (server not reachable)", () => {
    it("upgrades and shares a host's database", () => undefined)
  })
} else {
  runUpgradeSuite("postgres", async () => {
    const url = Redacted.make((await freshPostgresUrl())!)
    return {
      client: PgClient.layer({ url }),
      engine: (tablePrefix) => layerPostgres({ url, tablePrefix, databaseClock: false })
    }
  })
}
