import { createClient } from "@redis/client"
import { type ChildProcess, spawn } from "node:child_process"
import { binaryOnPath } from "./binaries.js"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The shared server the tests use; CI provides it at this address. Other runs use it too. */
export const TEST_REDIS_URL = process.env["TEST_REDIS_URL"] ?? "redis://127.0.0.1:6379"

const clientOf = (url: string) =>
  createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: false, connectTimeout: 2_000 } })

/** A client that tries once, for the tests' own checks and cleanup. */
export const withRedis = async <A>(url: string, run: (client: ReturnType<typeof clientOf>) => Promise<A>) => {
  const client = clientOf(url)
  client.on("error", () => undefined)
  try {
    await client.connect()
    return await run(client)
  } finally {
    client.destroy()
  }
}

export const ping = (url: string) => withRedis(url, (client) => client.ping())

/**
 * Whether the shared Redis answers. Under CI a missing server is an error: the Redis suites must
 * not pass by skipping.
 */
export const redisAvailable = async (): Promise<boolean> => {
  try {
    await ping(TEST_REDIS_URL)
    return true
  } catch (error) {
    if (process.env["CI"]) throw new Error(`Redis is required in CI (${TEST_REDIS_URL}): ${String(error)}`)
    return false
  }
}

/** Deletes exactly these keys (the ones a test made), nothing else of the shared server. */
export const deleteKeys = async (url: string, keys: ReadonlyArray<string>) => {
  if (keys.length > 0) await withRedis(url, (client) => client.del([...keys]))
}

/** Whether a `redis-server` binary is on PATH; under CI its absence is an error. */
export const redisServerAvailable = () => binaryOnPath("redis-server")

export { freePort } from "./serverProcess.js"

/** Polls until the server at `url` answers PING, or throws once `ms` passed. */
export const waitForRedis = async (url: string, ms = 10_000) => {
  const until = Date.now() + ms
  let last: unknown
  while (Date.now() < until) {
    try {
      await ping(url)
      return
    } catch (error) {
      last = error
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  throw new Error(`Redis at ${url} did not answer within ${ms} ms: ${String(last)}`)
}

/**
 * A private `redis-server` without persistence on `port` (a broker whose restart loses
 * everything), in a scratch directory of its own. `kill` ends this process only, by its PID.
 */
export const startRedisServer = async (port: number) => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-redis-"))
  const child: ChildProcess = spawn(
    "redis-server",
    ["--save", "", "--appendonly", "no", "--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
    { stdio: "ignore" }
  )
  const exited = new Promise<void>((resolve) => {
    child.on("exit", () => resolve())
    child.on("error", () => resolve())
  })
  const url = `redis://127.0.0.1:${port}`
  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, signal)
    await exited
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitForRedis(url)
  } catch (error) {
    await kill()
    throw error
  }
  return { url, pid: child.pid, kill }
}

/** Deletes the keys matching each pattern (a test's prefix and `*`: the keys it made), nothing else. */
export const deleteKeysMatching = async (url: string, patterns: ReadonlyArray<string>) => {
  if (patterns.length === 0) return
  await withRedis(url, async (client) => {
    for (const pattern of patterns) {
      for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1_000 })) if (keys.length > 0) await client.del(keys)
    }
  })
}
