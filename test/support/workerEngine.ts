import type { Layer } from "effect"
import { makeEngine, type StorePorts } from "../../entries/index.js"
import { memoryFiles, type memoryQueue, memoryStore } from "../../entries/memory.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import type { EngineSettings } from "../../src/services/EngineConfig.js"

/**
 * An engine without workers, dispatchers or sweepers, its provider `demo`, files in memory: the
 * test starts its workers itself (Worker.start). On the memory store unless `store` says
 * otherwise; its queue the store's own, or the broker `queue` makes.
 */
export const workerEngine = (
  provider: GenerationProvider,
  settings: Partial<EngineSettings>,
  options: { readonly queue?: typeof memoryQueue | undefined; readonly store?: Layer.Layer<StorePorts, unknown> | undefined } = {}
) =>
  makeEngine({
    store: options.store ?? memoryStore(),
    files: memoryFiles({ publicUrl: "http://files.test" }),
    queue: options.queue?.(),
    providers: { demo: provider },
    workers: 0,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false,
    settings
  })
