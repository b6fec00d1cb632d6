import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { type ChildProcess, spawn } from "node:child_process"
import { binaryOnPath } from "./binaries.js"

/** The shared server the tests use (JetStream enabled); CI provides it at this address. Other runs use it too. */
export const TEST_NATS_URL = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222"

/** A connection that tries once, for the tests' own checks and cleanup. */
const withConnection = async <A>(url: string, run: (nc: NatsConnection) => Promise<A>) => {
  const nc = await connect({ servers: url, reconnect: false, timeout: 2_000 })
  try {
    return await run(nc)
  } finally {
    await nc.close()
  }
}

/** Answers once the server at `url` accepts a connection and its JetStream answers (account info). */
export const pingJetStream = (url: string) =>
  withConnection(url, async (nc) => {
    await jetstreamManager(nc, { timeout: 2_000 })
  })

/**
 * Whether the shared NATS answers, with JetStream. Under CI a missing server is an error: the NATS
 * suites must not pass by skipping.
 */
export const natsAvailable = async (): Promise<boolean> => {
  try {
    await pingJetStream(TEST_NATS_URL)
    return true
  } catch (error) {
    if (process.env["CI"]) throw new Error(`NATS with JetStream is required in CI (${TEST_NATS_URL}): ${String(error)}`)
    return false
  }
}

/** Deletes exactly these streams (the ones a test made), nothing else of the shared server. */
export const deleteStreams = async (url: string, streams: ReadonlyArray<string>) => {
  if (streams.length === 0) return
  await withConnection(url, async (nc) => {
    const jsm = await jetstreamManager(nc, { timeout: 5_000 })
    for (const stream of streams) {
      await jsm.streams.delete(stream).catch((error: unknown) => {
        // A test whose queue never started made no stream.
        if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error
      })
    }
  })
}

/** Whether a `nats-server` binary is on PATH; under CI its absence is an error. */
export const natsServerAvailable = () => binaryOnPath("nats-server")

export { freePort } from "./serverProcess.js"

/** Polls until the server at `url` answers with JetStream, or throws once `ms` passed. */
export const waitForNats = async (url: string, ms = 15_000) => {
  const until = Date.now() + ms
  let last: unknown
  while (Date.now() < until) {
    try {
      await pingJetStream(url)
      return
    } catch (error) {
      last = error
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  throw new Error(`NATS at ${url} did not answer within ${ms} ms: ${String(last)}`)
}

/**
 * A private `nats-server` with JetStream on `port`, storing in `storeDir` (a restart on the same
 * directory finds its streams again). `kill` ends this process only, by its PID; the directory
 * is the caller's to remove.
 */
export const startNatsServer = async (port: number, storeDir: string) => {
  const child: ChildProcess = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], {
    stdio: ["ignore", "ignore", "pipe"]
  })
  let output = ""
  child.stderr!.on("data", (chunk) => (output += String(chunk)))
  const exited = new Promise<void>((resolve) => {
    child.on("exit", () => resolve())
    child.on("error", () => resolve())
  })
  const url = `nats://127.0.0.1:${port}`
  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, signal)
    await exited
  }
  try {
    await waitForNats(url)
  } catch (error) {
    await kill()
    throw new Error(`${String(error)}\n${output}`)
  }
  return { url, pid: child.pid, kill }
}
