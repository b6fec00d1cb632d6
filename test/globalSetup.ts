import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { dropTestDatabases, postgresAvailable } from "./support/postgres.js"

/** Test databases are dropped after the run (and any left over from an interrupted one). */
export default async function setup() {
  // Inherited by the test processes: names this run's databases (see support/postgres.ts).
  process.env["GENJOBS_TEST_RUN"] = randomBytes(4).toString("hex")
  // End-to-end suites run the built package (dist/), as `npm start` and installs do: build it first
  // (the compiler, then the dashboard's browser files copied beside its module).
  execFileSync("npm", ["run", "build", "--silent"], { stdio: "inherit" })
  const available = await postgresAvailable()
  if (!available) console.warn("PostgreSQL is not reachable: its suites are skipped (they fail when CI is set).")
  return async () => {
    if (available) await dropTestDatabases()
  }
}
