import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../..", import.meta.url))

export interface TsProcess {
  readonly child: ChildProcess
  readonly pid: number
  /** Everything it printed so far, stdout and stderr. */
  output: string
  readonly exited: Promise<number | null>
  /** Sends `signal` (SIGKILL, SIGSTOP, SIGCONT ...) if it is still running. */
  signal(signal: NodeJS.Signals): void
  /** Ends it with `signal` and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Runs a TypeScript file of test/faults/support in its own Node process (tsx, the package's
 * entries from source as the bench runs them) and waits until it prints `readyLine`.
 */
export const startTs = async (
  file: string,
  env: Record<string, string>,
  options: { readonly readyLine: string; readonly execArgv?: ReadonlyArray<string>; readonly timeoutMs?: number }
): Promise<TsProcess> => {
  const child = spawn(
    process.execPath,
    [...(options.execArgv ?? []), "--conditions=genjobs-source", "--import", "tsx", fileURLToPath(new URL(file, import.meta.url))],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] }
  )
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const running: TsProcess = {
    child,
    pid: child.pid!,
    output: "",
    exited,
    signal: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
    stop: async (signal = "SIGTERM") => {
      running.signal("SIGCONT")
      running.signal(signal)
      return exited
    }
  }
  child.stdout!.on("data", (chunk) => (running.output += String(chunk)))
  child.stderr!.on("data", (chunk) => (running.output += String(chunk)))
  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  while (!running.output.includes(options.readyLine)) {
    if (child.exitCode !== null) throw new Error(`${file} exited early:\n${running.output}`)
    if (Date.now() > deadline) {
      await running.stop("SIGKILL")
      throw new Error(`${file} did not start:\n${running.output}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return running
}

/** A process's resident set size in bytes, from /proc (Linux). */
export const rssOf = (pid: number): number => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))
  if (line === undefined) throw new Error(`no VmRSS for ${pid}`)
  return Number(/(\d+)/.exec(line)![1]) * 1024
}
