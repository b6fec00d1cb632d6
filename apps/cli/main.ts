#!/usr/bin/env node
import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import { createRequire } from "node:module"
import { accounts } from "./accounts.js"
import { catalog } from "./catalog.js"
import { jobs } from "./jobs.js"
import { keys } from "./keys.js"
import { migrate, serve, SERVER_MODULE } from "./server.js"

/** `genjobs`: the operator's command line, over the admin API of a running server. See docs/cli.md. */
const genjobs = Command.make("genjobs").pipe(
  Command.withDescription("Operate a genjobs server: accounts, keys, catalog and jobs"),
  Command.withSubcommands([serve, migrate, accounts, keys, catalog, jobs])
)

/** The package's own version, read without loading the engine, so commands start quickly. */
const { version } = createRequire(import.meta.url)("genjobs/package.json") as { readonly version: string }

const cli = Command.run(genjobs, { name: "genjobs", version })

if (process.argv.length === 3 && process.argv[2] === "serve") {
  // The server owns the process, its signals and its exit code, exactly as under `npm start`.
  await import(SERVER_MODULE)
} else {
  // Errors were printed where they happened (CliError) or by @effect/cli (usage); the exit code says the rest.
  cli(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain({ disableErrorReporting: true }))
}
