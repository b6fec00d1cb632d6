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
export type { BasePathMountOptions, Mountable, MountOptions } from "../adapters/http/options.js"
export { genjobsNode } from "../adapters/http/node.js"
export {
  type ExpressErrorHandler,
  type ExpressHandler,
  type ExpressRequestLike,
  genjobsExpress
} from "../adapters/http/express.js"
export { type FastifyInstanceLike, type FastifyPlugin, type FastifyReplyLike, genjobsFastify } from "../adapters/http/fastify.js"
export { genjobsHono, type HonoContextLike, type HonoHandler, type HonoMountOptions } from "../adapters/http/hono.js"
export { genjobsNext, type NextRouteHandlers } from "../adapters/http/next.js"
