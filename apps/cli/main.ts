#!/usr/bin/env node
import type { Micro as MicroProgram } from "effect/Micro"
import { createRequire } from "node:module"
import { parseCommandLine } from "./commandLine.js"
import { commands, type Runnable } from "./commands.js"
import { errorText } from "./errorText.js"
import { helpText } from "./help.js"

/**
 * `genjobs`: the operator's command line, over the admin API of a running server. See docs/cli.md.
 * It loads only the command asked for: help and usage errors load nothing more, a command its own
 * module and the parts of Effect it uses, and only `catalog validate`, `migrate` and `serve` the engine.
 */
const pkg = createRequire(import.meta.url)("genjobs/package.json") as {
  readonly version: string
  readonly peerDependencies: Record<string, string>
}
const { version } = pkg

/** What `serve` loads beyond the package: the HTTP platform, and the drivers of its default store (SQLite). */
const SERVER_PACKAGES = ["@effect/platform-node", "@effect/sql", "@effect/sql-sqlite-node", "@effect/sql-pg", "pg"]
const parsed = parseCommandLine(commands, process.argv.slice(2))

switch (parsed._tag) {
  case "Version":
    console.log(version)
    break
  case "Help":
    console.log(helpText(commands, parsed.path, version))
    break
  case "Usage": {
    const name = ["genjobs", ...parsed.path].join(" ")
    console.error(errorText(parsed.json, { code: "USAGE", message: `${name}: ${parsed.message}` }))
    if (!parsed.json) console.error(`Run ${name} --help for its usage.`)
    process.exitCode = 1
    break
  }
  case "Run": {
    if (parsed.path[0] === "serve") {
      // The server owns the process, its signals and its exit code, exactly as under `npm start`.
      await import("../server/main.js").catch((error: { code?: string; message?: string }) => {
        if (error.code !== "ERR_MODULE_NOT_FOUND") throw error
        const line = SERVER_PACKAGES.map((name) => `${name}@${pkg.peerDependencies[name]}`).join(" ")
        console.error(errorText(false, {
          code: "CONFIG_ERROR",
          message: `genjobs serve needs packages that are not installed (${String(error.message).split("\n")[0]}). Install them: npm install ${line}`
        }))
        process.exitCode = 1
      })
      break
    }
    const [group, name] = parsed.path as [keyof typeof commands, string]
    const node = commands[group]
    const spec = ("commands" in node ? node.commands[name as keyof typeof node.commands] : node) as unknown as Runnable
    const [run, Micro] = await Promise.all([spec.load(), import("effect/Micro")])
    const program = run(parsed.input)
    // The commands against a server are Micro (a few dozen modules of Effect); migrate runs the engine's Effect.
    if (Micro.isMicro(program)) {
      const exit = await Micro.runPromiseExit(program as MicroProgram<void, unknown>)
      if (exit._tag === "Failure") {
        // A CliError was printed where it happened; anything else is a bug, shown whole.
        if (exit.cause._tag !== "Fail") console.error(exit.cause)
        process.exitCode = 1
      }
    } else {
      const [{ runPromiseExit }, Cause] = await Promise.all([import("effect/Effect"), import("effect/Cause")])
      const exit = await runPromiseExit(program)
      if (exit._tag === "Failure") {
        if (Cause.failureOption(exit.cause)._tag === "None") console.error(Cause.pretty(exit.cause))
        process.exitCode = 1
      }
    }
  }
}
