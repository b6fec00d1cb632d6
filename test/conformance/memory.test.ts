import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { runStoreConformance } from "./storeSuite.js"

runStoreConformance("memory", () => layerMemoryStores)
