/** The engine's HTTP surface: the web handler, its layers, and mounts for common servers. */
export {
  type EngineFetch,
  makeWebHandler,
  normalizeBasePath,
  type RequestInfo,
  type WebHandler,
  webHandlerInScope,
  type WebHandlerOptions
} from "../src/http/webHandler.js"
export { EngineHttpLive, type EngineHttpRequirements } from "../src/http/layer.js"
export { HttpConfig, type HttpOptions, type HttpSettings } from "../src/http/HttpConfig.js"
export { EngineApi } from "../src/http/Api.js"
export { FILES_PATH } from "../src/http/systemRoutes.js"
