import { type ChildProcess, fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { engineFrom } from "./env.js"

/**
 * Parent <-> child messages of the multi-process figures: the child loads its modules and says
 * `ready`; the parent says `go` to all at once (the clock starts), then `stop`, and the child exits.
 */
export type ToChild = { readonly type: "go" } | { readonly type: "stop" }
export type FromChild = { readonly type: "ready" } | { readonly type: "started" } | {
  readonly type: "failed"
  readonly message: string
}

/**
 * How `npm run bench` runs TypeScript in a child process: through tsx, its `genjobs` from where
 * this process's comes (env.ts, `engineFrom`: `dist/` under `npm run bench`), plus
 * BENCH_CHILD_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", "--trace-gc",
 * "--max-old-space-size=768") for the figure's processes.
 */
export const childExecArgv = (): Array<string> => [
  ...(engineFrom === "sources" ? ["--conditions=genjobs-source"] : []),
  "--import",
  "tsx",
  ...(process.env.BENCH_CHILD_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")
]

/** Runs a TypeScript file of bench/ in its own Node process, as `npm run bench` runs this one. */
export const forkTs = (file: string, env: Record<string, string>): ChildProcess =>
  fork(fileURLToPath(new URL(`../${file}`, import.meta.url)), [], {
    execArgv: childExecArgv(),
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })

/** The next message of `type` from the child; fails if it exits first or reports a failure. */
export const nextMessage = (child: ChildProcess, type: FromChild["type"]): Promise<void> =>
  new Promise((resolve, reject) => {
    const onMessage = (message: FromChild) => {
      if (message.type === "failed") return done(reject, new Error(`child failed: ${message.message}`))
      if (message.type === type) done(resolve, undefined)
    }
    const onExit = (code: number | null) => done(reject, new Error(`child exited (${code}) before "${type}"`))
    const done = <T>(settle: (value: T) => void, value: T) => {
      child.off("message", onMessage)
      child.off("exit", onExit)
      settle(value)
    }
    child.on("message", onMessage)
    child.on("exit", onExit)
  })

/** In a child: answers the parent's messages with `start` and `stop`, reporting failures. */
export const serveParent = (handlers: { readonly start: () => Promise<void>; readonly stop: () => Promise<void> }) => {
  const send = (message: FromChild) => process.send!(message)
  process.on("message", (message: ToChild) => {
    // Exiting (rather than waiting for handles to close) guarantees the parent can drop the
    // database right after: the OS closes every connection a library might leave open.
    const run = message.type === "go"
      ? handlers.start().then(() => send({ type: "started" }))
      : handlers.stop().then(() => process.exit(0))
    run.catch((error: unknown) => {
      process.send!({ type: "failed", message: String(error instanceof Error ? error.stack : error) } satisfies FromChild, () => process.exit(1))
    })
  })
  send({ type: "ready" })
}

/** Starts the children together and waits for every one to say `started`. */
export const goAll = async (children: ReadonlyArray<ChildProcess>) => {
  const started = children.map((c) => nextMessage(c, "started"))
  for (const c of children) c.send({ type: "go" } satisfies ToChild)
  await Promise.all(started)
}

export const readyAll = (children: ReadonlyArray<ChildProcess>) => Promise.all(children.map((c) => nextMessage(c, "ready")))

/** Asks each child to stop and waits for it to exit; one that hangs 30 s is killed. */
export const stopAll = async (children: ReadonlyArray<ChildProcess>) => {
  await Promise.all(children.map((c) => exited(c, () => c.send({ type: "stop" } satisfies ToChild))))
}

/** Resolves when `child` has exited, after calling `ask` if it is still running. */
export const exited = (child: ChildProcess, ask: () => void, timeoutMs = 30_000): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    try {
      ask()
    } catch {
      child.kill("SIGKILL")
    }
  })
