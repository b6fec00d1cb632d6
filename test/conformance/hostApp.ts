import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"

/**
 * A host application sharing the engine's database: its own `accounts` and `jobs` (not the
 * engine's columns), data, and migrations recorded by effect/sql's Migrator in its default
 * `effect_sql_migrations`. The n-th migration's DDL is fixed; its name is the caller's.
 */
const HOST_DDL: ReadonlyArray<ReadonlyArray<string>> = [
  ["CREATE TABLE accounts (id INTEGER PRIMARY KEY, email TEXT NOT NULL)"],
  [
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, account_id INTEGER NOT NULL REFERENCES accounts (id), title TEXT NOT NULL)",
    "INSERT INTO accounts (id, email) VALUES (1, 'ann@host.example'), (2, 'bo@host.example')",
    "INSERT INTO jobs (id, account_id, title) VALUES (1, 1, 'paint the fence'), (2, 2, 'file taxes')"
  ],
  ["ALTER TABLE accounts ADD COLUMN plan TEXT", "UPDATE accounts SET plan = 'pro' WHERE id = 1"],
  ["CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)", "INSERT INTO invoices (id, total) VALUES (1, 4200)"],
  ["CREATE INDEX jobs_title ON jobs (title)"],
  ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"]
]

/** Runs the host's migrator with its first `names.length` migrations; answers what it ran. */
export const hostMigrate = (names: ReadonlyArray<string>) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(Object.fromEntries(names.map((name, i) => [
      `${String(i + 1).padStart(4, "0")}_${name}`,
      Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.forEach(HOST_DDL[i]!, (statement) => sql.unsafe(statement)))
    ])))
  })

/** Everything of the host's the engine must leave as it was. */
export const hostRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    accounts: yield* sql`SELECT * FROM accounts ORDER BY id`,
    jobs: yield* sql`SELECT * FROM jobs ORDER BY id`,
    invoices: yield* sql`SELECT * FROM invoices ORDER BY id`,
    migrations: yield* sql`SELECT * FROM effect_sql_migrations ORDER BY migration_id`
  }
})
