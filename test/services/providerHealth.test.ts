import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { layerProviders } from "../../src/ports/Provider.js"
import { EngineConfig } from "../../src/services/EngineConfig.js"
import { ProviderHealth } from "../../src/services/ProviderHealth.js"
import { idleProvider } from "../support/providers.js"

const layer = ProviderHealth.layer.pipe(
  Layer.provide(EngineConfig.layer({ providerCircuit: { failures: 2, pauseMs: 30_000 } })),
  Layer.provide(layerProviders({ quiet: idleProvider }))
)

describe("ProviderHealth", () => {
  it.effect("opens a credential's circuit after the configured failures, lets one probe through after the pause, and closes on its success", () =>
    Effect.gen(function*() {
      const health = yield* ProviderHealth
      const now = Clock.currentTimeMillis
      yield* health.failed("p", "k1")
      expect(health.available("p", "k1", yield* now)).toBe(true)
      yield* health.failed("p", "k1")
      expect(health.available("p", "k1", yield* now)).toBe(false)
      expect(health.available("p", "k2", yield* now)).toBe(true)
      yield* TestClock.adjust(29_999)
      expect(health.admit("p", "k1", yield* now)).toBe(false)
      yield* TestClock.adjust(1)
      expect(health.admit("p", "k1", yield* now)).toBe(true)
      expect(health.admit("p", "k1", yield* now)).toBe(false)
      const probing = (yield* health.snapshot).find((e) => e.credentialId === "k1")
      expect(probing?.circuit).toMatchObject({ state: "half_open", failures: 2, openedAt: 0 })
      health.succeeded("p", "k1")
      expect((yield* health.snapshot).find((e) => e.credentialId === "k1")?.circuit).toEqual({ state: "closed", failures: 0 })
    }).pipe(Effect.provide(layer)))

  it.effect("lists every registered provider, called or not, and counts generations in flight while held", () =>
    Effect.gen(function*() {
      const health = yield* ProviderHealth
      expect(yield* health.snapshot).toEqual([{ providerId: "quiet", credentialId: "default", circuit: { state: "closed", failures: 0 }, inFlight: 0 }])
      const release = health.hold("quiet", "default")
      expect(health.inFlight("quiet", "default")).toBe(1)
      release()
      release()
      expect(health.inFlight("quiet", "default")).toBe(0)
    }).pipe(Effect.provide(layer)))
})
