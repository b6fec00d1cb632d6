import { dropTestDatabases, postgresAvailable } from "./support/postgres.js"

/** Test databases are dropped after the run (and any left over from an interrupted one). */
export default async function setup() {
  const available = await postgresAvailable()
  if (!available) console.warn("PostgreSQL is not reachable: its suites are skipped (they fail when CI is set).")
  return async () => {
    if (available) await dropTestDatabases()
  }
}
