import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { CatalogDocument, emptyCatalog } from "../../src/domain/catalog.js"
import type { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { DbInt, decodeRows, storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeStored = decodeRows(
  Schema.Array(Schema.Struct({ document: Schema.fromJsonString(CatalogDocument), revision: DbInt }))
)
const decodeRevision = decodeRows(Schema.Array(Schema.Struct({ revision: DbInt })))

/** The catalog is one document in one row; its revision lets every process see a change. */
export const makeSqlCatalog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  const load = sql`SELECT document, revision FROM ${t.catalog} WHERE id = 1`.pipe(
    Effect.flatMap(decodeStored),
    Effect.map((rows) => rows[0] ?? { document: emptyCatalog, revision: 0 })
  )
  const encode = Schema.encodeEffect(Schema.fromJsonString(CatalogDocument))
  const repo: CatalogRepo["Service"] = {
    load: load.pipe(storeErrors("read catalog")),
    revision: sql`SELECT revision FROM ${t.catalog} WHERE id = 1`.pipe(
      Effect.flatMap(decodeRevision),
      Effect.map((rows) => rows[0]?.revision ?? 0),
      storeErrors("read catalog revision")
    ),
    replace: (document, ifRevision) =>
      sql.withTransaction(Effect.gen(function*() {
        const text = yield* encode(document)
        // The revision is compared in the write itself, so two replaces made against one revision
        // cannot both pass: the second finds the row at the next revision, or the first's row.
        const written = ifRevision === undefined
          ? yield* sql`INSERT INTO ${t.catalog} (id, document, revision) VALUES (1, ${text}, 1)
              ON CONFLICT (id) DO UPDATE SET document = ${text}, revision = ${t.catalog}.revision + 1 RETURNING revision`
          : ifRevision === 0
          ? yield* sql`INSERT INTO ${t.catalog} (id, document, revision) VALUES (1, ${text}, 1)
              ON CONFLICT (id) DO NOTHING RETURNING revision`
          : yield* sql`UPDATE ${t.catalog} SET document = ${text}, revision = revision + 1
              WHERE id = 1 AND revision = ${ifRevision} RETURNING revision`
        return written.length === 0 ? Option.none() : Option.some(yield* load)
      })).pipe(storeErrors("replace catalog"))
  }
  return repo
})
