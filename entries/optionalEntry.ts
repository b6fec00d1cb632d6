import { Data, Effect } from "effect"
import { createRequire } from "node:module"

/**
 * The optional peers each entry imports; the rest of the package needs none. SQLite needs none
 * either (Node's own node:sqlite, effect's own SQL): it is loaded the same way so that a bundler
 * packing the main entry does not follow it.
 */
export const OPTIONAL_PACKAGES = {
  "genjobs/sqlite": [],
  "genjobs/postgres": ["@effect/sql-pg"],
  "genjobs/s3": ["@aws-sdk/client-s3", "@aws-sdk/lib-storage", "@aws-sdk/s3-request-presigner"],
  "genjobs/redis": ["@redis/client"],
  "genjobs/nats": ["@nats-io/transport-node", "@nats-io/jetstream"]
} as const

export type OptionalEntry = keyof typeof OPTIONAL_PACKAGES

/** The settings chose a part of the engine whose packages are not installed; the message gives the install line. */
export class MissingPackagesError extends Data.TaggedError("MissingPackagesError")<{
  readonly message: string
  readonly entry: OptionalEntry
  /** The install line's packages, with the ranges genjobs declares for them. */
  readonly packages: ReadonlyArray<string>
  readonly cause: unknown
}> {}

/** `name@range` as genjobs's package.json declares the peer; the bare name if that cannot be read. */
const withRange = (name: string): string => {
  try {
    const pkg = createRequire(import.meta.url)("genjobs/package.json") as { peerDependencies: Record<string, string> }
    const range = pkg.peerDependencies[name]
    return range === undefined ? name : `${name}@${range}`
  } catch {
    return name
  }
}

const missing = (entry: OptionalEntry, chosen: string, cause: unknown) => {
  const packages = OPTIONAL_PACKAGES[entry].map(withRange)
  // Node's own line names the first package it could not find.
  const found = String((cause as Error).message).split("\n")[0]
  return new MissingPackagesError({
    message: `${chosen}: ${entry} needs packages that are not installed (${found}). Install them: npm install ${packages.join(" ")}`,
    entry,
    packages,
    cause
  })
}

const isModuleNotFound = (error: unknown) =>
  typeof error === "object" && error !== null && "code" in error &&
  (error.code === "ERR_MODULE_NOT_FOUND" || error.code === "MODULE_NOT_FOUND")

/**
 * One of the package's optional entries, loaded by its package name when the settings choose it
 * (`chosen` says which setting, for the error).
 * The name is not a literal and the bundler comments say not to follow it: a bundler packing the
 * main entry into an app (Next.js) would otherwise resolve every store and file adapter and fail on
 * the packages the app did not install. At run time Node resolves it from the installed genjobs.
 */
export const loadOptionalEntry = <M>(entry: OptionalEntry, chosen: string): Effect.Effect<M, MissingPackagesError> =>
  Effect.tryPromise({
    try: () => import(/* webpackIgnore: true */ /* turbopackIgnore: true */ /* @vite-ignore */ entry) as Promise<M>,
    catch: (cause) => cause
  }).pipe(
    Effect.catch((cause) =>
      isModuleNotFound(cause)
        ? Effect.fail(missing(entry, chosen, cause))
        : Effect.die(cause)
    )
  )
