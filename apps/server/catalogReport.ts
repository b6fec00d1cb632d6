import { Effect } from "effect"
import { Catalog, unregisteredLine, type UnregisteredVersion } from "genjobs"
import { PROVIDER_CREDENTIALS } from "./providers.js"

/**
 * One line per catalog version this server cannot run because none of its providers is
 * registered here, saying what it does meanwhile and which variable would register it.
 */
export const unregisteredReport = (
  versions: ReadonlyArray<UnregisteredVersion>,
  credentials: Readonly<Record<string, string>> = PROVIDER_CREDENTIALS
): ReadonlyArray<string> =>
  versions.map((version) => {
    const variables = version.providers.flatMap((id) => (credentials[id] === undefined ? [] : [credentials[id]]))
    const remedy = variables.length > 0 ? `set ${variables.join(" or ")} to serve it` : "register its provider to serve it"
    return `catalog: ${unregisteredLine(version)}: served as disabled; ${remedy}`
  })

/** Logs the report of the stored catalog, one warning each: the server starts and serves the rest. */
export const reportUnregistered = Effect.gen(function*() {
  const lines = unregisteredReport(yield* (yield* Catalog).unregistered)
  yield* Effect.forEach(lines, (line) => Effect.logWarning(line), { discard: true })
})
