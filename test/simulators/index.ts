/**
 * The provider simulators the dev server (`npm run simulators`, serve.ts) starts, each on a
 * fixed port, with the environment that points the bundled app at it. Add a simulator here to
 * have it served.
 */
import { startFalSimulator } from "./fal.js"
import { startOpenAISimulator } from "./openai.js"
import { startReplicateSimulator } from "./replicate.js"
import { startRunwaySimulator } from "./runway.js"

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
  readonly start: (port: number, durationMs: number) => Promise<ServedSimulator>
}

export const simulators: ReadonlyArray<SimulatorEntry> = [
  {
    name: "replicate",
    port: 4101,
    start: async (port, durationMs) => {
      const sim = await startReplicateSimulator({ port, durationMs })
      return {
        url: sim.url,
        env: { REPLICATE_BASE_URL: sim.url, REPLICATE_API_TOKEN: sim.apiToken, REPLICATE_WEBHOOK_SECRET: sim.webhookSecret },
        close: sim.close
      }
    }
  },
  {
    name: "fal",
    port: 4102,
    start: async (port, durationMs) => {
      const sim = await startFalSimulator({ port, durationMs })
      return {
        url: sim.url,
        env: { FAL_BASE_URL: sim.url, FAL_KEY: sim.apiKey, FAL_WEBHOOK_PUBLIC_KEYS: sim.publicKeyBase64 },
        close: sim.close
      }
    }
  },
  {
    name: "openai",
    port: 4103,
    start: async (port, durationMs) => {
      const sim = await startOpenAISimulator({ port, videoMs: durationMs })
      return { url: sim.url, env: { OPENAI_BASE_URL: sim.url, OPENAI_API_KEY: sim.apiKey }, close: sim.close }
    }
  },
  {
    name: "runway",
    port: 4104,
    start: async (port, durationMs) => {
      const sim = await startRunwaySimulator({ port, taskMs: durationMs })
      return { url: sim.url, env: { RUNWAYML_BASE_URL: sim.url, RUNWAYML_API_SECRET: sim.apiSecret }, close: sim.close }
    }
  }
]
