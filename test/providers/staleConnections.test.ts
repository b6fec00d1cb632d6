/**
 * A start on the provider's pool of kept-alive connections, when the provider closed one of
 * them: the two ways a server closes a pooled connection while the engine holds it (its idle
 * timeout; going down), against the Replicate simulator keeping connections 10 s. A start the
 * provider never got must come back as never sent (so the engine falls back or asks again),
 * never as a start that may have happened (which fails its job), and no start is made twice.
 */
import { afterEach, describe, expect, it } from "vitest"
import { Effect, Result } from "effect"
import { stat } from "node:fs"
import { replicateProvider } from "genjobs/providers/replicate"
import type { GenerationProvider, ProviderError } from "../../src/ports/Provider.js"
import { type ReplicateSimulator, startReplicateSimulator } from "../simulators/replicate.js"
import { requestFor } from "./support.js"

let sim: ReplicateSimulator | undefined
afterEach(async () => {
  await sim?.close()
  sim = undefined
})

const providerFor = (simulator: ReplicateSimulator): GenerationProvider =>
  replicateProvider({ apiToken: simulator.apiToken, baseUrl: simulator.url, requestTimeoutMs: 2_000 })

const start = (provider: GenerationProvider, prompt: string) =>
  Effect.runPromise(Effect.result(provider.start(requestFor("acme/image-gen", { prompt }))))

const failureOf = (result: Result.Result<unknown, ProviderError>): ProviderError => {
  if (Result.isSuccess(result)) throw new Error("the start succeeded")
  return result.failure
}

describe("a start on a pooled connection the provider closed", { timeout: 20_000 }, () => {
  it("a server that closes connections idle 5 s without saying so: a start after that goes on a new connection and is made once", async () => {
    // 5 s: Node's, uvicorn's and Apache's idle timeout; the simulator announces 10 s, so only the pool's own idle limit is below it.
    sim = await startReplicateSimulator({ durationMs: 50, keepAliveMs: 10_000, idleCloseMs: 5_000 })
    const provider = providerFor(sim)
    expect(Result.isSuccess(await start(provider, "first"))).toBe(true)
    // Idle longer than the server keeps a connection, shorter than the 8 s undici reads from its announcement.
    await new Promise((resolve) => setTimeout(resolve, 5_500))
    const second = await start(provider, "second")
    expect(Result.isSuccess(second) ? "started" : failureOf(second).message).toBe("started")
    expect(sim.counters.starts).toBe(2)
    expect([sim.counters.startsByMarker.get("first"), sim.counters.startsByMarker.get("second")]).toEqual([1, 1])
  })

  it("a provider gone down since the last answer: the start written before the process read the close is refused as never sent", async () => {
    sim = await startReplicateSimulator({ durationMs: 50, keepAliveMs: 10_000 })
    const provider = providerFor(sim)
    expect(Result.isSuccess(await start(provider, "first"))).toBe(true)
    // From an I/O callback, as the engine starts a job when its store answered: its connections
    // are closed, and the start follows in the same turn of the event loop, before any read.
    await new Promise((resolve) => stat(".", resolve))
    await sim.goDown()
    const refused = failureOf(await start(provider, "while down"))
    expect(refused).toMatchObject({ _tag: "ProviderUnreachable", notSent: true })
    expect(refused.message).toContain("ECONNREFUSED")
    await sim.comeBack()
    expect(Result.isSuccess(await start(provider, "back"))).toBe(true)
    expect(sim.counters.starts).toBe(2)
    expect(sim.counters.startsByMarker.get("while down")).toBeUndefined()
  })
})
