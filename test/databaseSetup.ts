import { randomBytes } from "node:crypto"
import { dropTestDatabases, postgresAvailable } from "./support/postgres.js"

/** This run's test databases: named for it (see support/postgres.ts) and dropped after it. */
export default async function setup() {
  // Inherited by the test processes: names this run's databases.
  process.env["GENJOBS_TEST_RUN"] = randomBytes(4).toString("hex")
  const available = await postgresAvailable()
  if (!available) console.warn("PostgreSQL is not reachable: its suites are skipped (they fail when CI is set).")
  return async () => {
    if (available) await dropTestDatabases()
  }
}
