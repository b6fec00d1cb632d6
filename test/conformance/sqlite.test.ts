import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { runStoreConformance } from "./storeSuite.js"

const dir = mkdtempSync(join(tmpdir(), "genjobs-sqlite-"))
let n = 0

// A fresh file per test: WAL mode and migrations run as in production.
runStoreConformance("sqlite", () => layerSqlite({ filename: join(dir, `store-${++n}.db`) }))

// Every query must follow the prefix, not only the default one.
runStoreConformance("sqlite, prefix acme_", () => layerSqlite({ filename: join(dir, `store-${++n}.db`), tablePrefix: "acme_" }))
