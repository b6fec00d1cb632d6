import { createRequire } from "node:module"
import { parseCommandLine } from "./commandLine.js"
import { commands, type Runnable } from "./commands.js"
import { errorText } from "./errorText.js"
import { helpText } from "./help.js"
import type { CliIoShape, Streams } from "./io.js"

const pkg = createRequire(import.meta.url)("genjobs/package.json") as {
  readonly version: string
  readonly dependencies: Record<string, string>
}

/**
 * The packages `serve` lacks for these settings: the HTTP platform the server's module imports
 * (a dependency of the package, missing only from an install that left it out), and the drivers of the store DATABASE_URL chooses that are missing, so that one install line
 * is enough and it names no driver of the other store.
 */
const missingForServe = async (env: CliIoShape["env"]): Promise<ReadonlyArray<string>> => {
  const [{ loadOptionalEntry }, Effect] = await Promise.all([import("genjobs"), import("effect/Effect")])
  const url = env["DATABASE_URL"]
  const store = url === undefined
    ? loadOptionalEntry("genjobs/sqlite", "DATABASE_URL is unset, so the store is SQLite")
    : /^postgres(ql)?:\/\//.test(url)
    ? loadOptionalEntry("genjobs/postgres", "DATABASE_URL names PostgreSQL")
    : Effect.void // The server refuses any other URL itself, with its own message.
  const drivers = await Effect.runPromise(Effect.match(store, { onFailure: (e) => e.packages, onSuccess: () => [] }))
  return [`@effect/platform-node@${pkg.dependencies["@effect/platform-node"]}`, ...drivers]
}

/**
 * `genjobs serve`: the bundled server's module, run in this very process; it owns the process from
 * here, its signals and its exit code, exactly as under `npm start`.
 */
const serve = (env: CliIoShape["env"], io: Streams): Promise<number> =>
  import("../server/main.js").then(
    () => 0,
    async (error: { code?: string; message?: string }) => {
      if (error.code !== "ERR_MODULE_NOT_FOUND") throw error
      const packages = await missingForServe(env)
      io.stderr(`${
        errorText(false, {
          code: "CONFIG_ERROR",
          message: `genjobs serve needs packages that are not installed (${String(error.message).split("\n")[0]}). Install them: npm install ${
            packages.join(" ")
          }`
        })
      }\n`)
      return 1
    }
  )

/**
 * `genjobs` with these words, this environment and these streams; answers the exit code. main.ts
 * calls it with the process's own, the tests with their buffers. It loads only the command asked
 * for: help and usage errors load nothing more, a command its own module and the parts of Effect
 * it uses, and only `catalog validate`, `migrate` and `serve` the engine.
 * `serve` hands the process to the bundled server, which reads the process's own environment.
 */
export const runCli = async (argv: ReadonlyArray<string>, env: CliIoShape["env"], io: Streams): Promise<number> => {
  const parsed = parseCommandLine(commands, argv)
  switch (parsed._tag) {
    case "Version":
      io.stdout(`${pkg.version}\n`)
      return 0
    case "Help":
      io.stdout(`${helpText(commands, parsed.path, pkg.version)}\n`)
      return 0
    case "Usage": {
      const name = ["genjobs", ...parsed.path].join(" ")
      io.stderr(`${errorText(parsed.json, { code: "USAGE", message: `${name}: ${parsed.message}` })}\n`)
      if (!parsed.json) io.stderr(`Run ${name} --help for its usage.\n`)
      return 1
    }
    case "Run": {
      if (parsed.path[0] === "serve") return serve(env, io)
      const [group, name] = parsed.path as [keyof typeof commands, string]
      const node = commands[group]
      const spec = ("commands" in node ? node.commands[name as keyof typeof node.commands] : node) as unknown as Runnable
      const [run, Effect, Cause, ConfigProvider, { CliIo }] = await Promise.all([
        spec.load(),
        import("effect/Effect"),
        import("effect/Cause"),
        import("effect/ConfigProvider"),
        import("./io.js")
      ])
      // The engine's settings (effect/Config, for migrate) from the given environment, read as the server reads process.env.
      const fromEnv = ConfigProvider.fromEnv({
        env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
        preserveEmptyStrings: true
      })
      const exit = await Effect.runPromiseExit(
        run(parsed.input).pipe(Effect.provideService(CliIo, { ...io, env }), Effect.provideService(ConfigProvider.ConfigProvider, fromEnv))
      )
      if (exit._tag === "Success") return 0
      // A CliError was printed where it happened; anything else is a bug, shown whole.
      if (!Cause.hasFails(exit.cause)) io.stderr(`${Cause.pretty(exit.cause)}\n`)
      return 1
    }
  }
}
