/** In-memory stores and files: for tests, demos and throwaway runs. Nothing survives the process. */
export { memoryFiles, memoryStore } from "../adapters/memory/parts.js"
export { layerMemoryStores } from "../adapters/memory/layer.js"
export { layerLocalJobSignal, layerLocalSignals, layerLocalWebhookSignal } from "../adapters/memory/LocalJobSignal.js"
export { layerMemoryBlobStore, makeMemoryBlobStore } from "../adapters/memory/MemoryBlobStore.js"
export { layerMemoryJobQueue, makeMemoryJobQueue, memoryQueue } from "../adapters/memory/MemoryJobQueue.js"
