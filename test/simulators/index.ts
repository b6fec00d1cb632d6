/**
 * The provider simulators the dev server (`npm run simulators`, serve.ts) starts, each on a
 * fixed port, with the environment that points the bundled app at it. Add a simulator here to
 * have it served.
 */
import type { SimulatorControls } from "./core.js"
import { startFalSimulator } from "./fal.js"
import { startOpenAISimulator } from "./openai.js"
import { startOpenRouterSimulator } from "./openrouter.js"
import { startReplicateSimulator } from "./replicate.js"
import { startRunwaySimulator } from "./runway.js"
import { startVeoSimulator } from "./veo.js"

export interface ServedSimulator {
  readonly url: string
  /** The bundled app's environment for this provider, pointed at the simulator. */
  readonly env: Readonly<Record<string, string>>
  readonly close: () => Promise<void>
}

export interface SimulatorEntry {
  /** The provider id catalogs name. */
  readonly name: string
  readonly port: number
  readonly start: (options: { readonly port: number; readonly durationMs: number }) => Promise<ServedSimulator>
}

const entry = <S extends SimulatorControls>(
  name: string,
  port: number,
  start: (options: { readonly port: number; readonly durationMs: number }) => Promise<S>,
  env: (simulator: S) => Readonly<Record<string, string>>
): SimulatorEntry => ({
  name,
  port,
  start: async (options) => {
    const simulator = await start(options)
    return { url: simulator.url, env: env(simulator), close: simulator.close }
  }
})

export const simulators: ReadonlyArray<SimulatorEntry> = [
  entry("replicate", 4101, startReplicateSimulator, (sim) => ({
    REPLICATE_BASE_URL: sim.url,
    REPLICATE_API_TOKEN: sim.apiToken,
    REPLICATE_WEBHOOK_SECRET: sim.webhookSecret
  })),
  entry("fal", 4102, startFalSimulator, (sim) => ({ FAL_BASE_URL: sim.url, FAL_KEY: sim.apiKey, FAL_WEBHOOK_PUBLIC_KEYS: sim.publicKeyBase64 })),
  entry("openai", 4103, startOpenAISimulator, (sim) => ({ OPENAI_BASE_URL: sim.url, OPENAI_API_KEY: sim.apiKey })),
  entry("runway", 4104, startRunwaySimulator, (sim) => ({ RUNWAYML_BASE_URL: sim.url, RUNWAYML_API_SECRET: sim.apiSecret })),
  entry("veo", 4105, startVeoSimulator, (sim) => ({ GEMINI_BASE_URL: sim.url, GEMINI_API_KEY: sim.apiKey })),
  entry("openrouter", 4106, startOpenRouterSimulator, (sim) => ({
    OPENROUTER_BASE_URL: sim.url,
    OPENROUTER_API_KEY: sim.apiKey,
    OPENROUTER_WEBHOOK_SECRET: sim.webhookSecret
  }))
]
