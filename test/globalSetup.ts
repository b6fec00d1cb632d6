import { execFileSync } from "node:child_process"
import databases from "./databaseSetup.js"

/**
 * For the suites that run the built package (dist/), as `npm start` and installs do: the end-to-end
 * and fault suites. Builds it first (the compiler, then the dashboard's browser files copied beside
 * its module), then sets up this run's databases. `npm test` needs no build and uses databaseSetup.ts alone.
 */
export default async function setup() {
  execFileSync("npm", ["run", "build", "--silent"], { stdio: "inherit" })
  return databases()
}
