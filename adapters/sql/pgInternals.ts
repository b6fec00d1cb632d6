import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

/**
 * The majors of `pg` and `pg-pool` whose private members the pool and client patches use:
 * pg-pool's `_pulseQueue` (handOverInTurn in pgPool.ts) and `_pendingQueue` (shedRequests in
 * pgShedding.ts, to serve requests under way first) and the client's `_txStatus`
 * (preparingClient in preparedStatements.ts). test/conformance/pgInternals.test.ts fails when an
 * installed release changes either, so a bump of these majors is checked before it ships.
 */
export const KNOWN_MAJORS = { pg: 8, "pg-pool": 3 } as const

export interface PgVersions {
  readonly pg: string | undefined
  readonly "pg-pool": string | undefined
}

const versionIn = (packageJson: string): string | undefined => {
  try {
    const { version } = JSON.parse(readFileSync(packageJson, "utf8")) as { version?: unknown }
    return typeof version === "string" ? version : undefined
  } catch {
    return undefined
  }
}

/** The installed versions, read from their package.json files (pg-pool's, found from pg's, exports none). */
export const installedPgVersions = (): PgVersions => {
  const require = createRequire(import.meta.url)
  try {
    const pgEntry = require.resolve("pg")
    const poolEntry = createRequire(pgEntry).resolve("pg-pool")
    return { pg: versionIn(require.resolve("pg/package.json")), "pg-pool": versionIn(join(dirname(poolEntry), "package.json")) }
  } catch {
    return { pg: undefined, "pg-pool": undefined }
  }
}

const majorOf = (version: string | undefined) => (version === undefined ? undefined : Number(version.split(".")[0]))

/** Whether both versions are of the majors the patches were written for. */
export const internalsKnown = (versions: PgVersions): boolean =>
  majorOf(versions.pg) === KNOWN_MAJORS.pg && majorOf(versions["pg-pool"]) === KNOWN_MAJORS["pg-pool"]
