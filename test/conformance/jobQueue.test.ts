import { Layer } from "effect"
import { layerMemoryJobQueue } from "../../adapters/memory/MemoryJobQueue.js"
import { runJobQueueConformance } from "./jobQueueSuite.js"

// A memory queue is one engine's, whatever its prefix: each layer built is a queue of its own.
runJobQueueConformance("memory", () => Layer.fresh(layerMemoryJobQueue))
