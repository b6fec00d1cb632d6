import type { IncomingMessage, ServerResponse } from "node:http"
import { serveNode } from "./nodeBridge.js"
import type { BasePathMountOptions, Mountable } from "./options.js"

/**
 * The engine as a `node:http` request listener: `createServer(genjobsNode(engine))`. Requests
 * outside the base path get the engine's 404 envelope, so give it its own server or route to it.
 */
export const genjobsNode = (engine: Mountable, options: BasePathMountOptions = {}) =>
(req: IncomingMessage, res: ServerResponse): void => {
  void serveNode(engine, req, res, req.url ?? "/", {
    remoteAddress: req.socket.remoteAddress,
    basePath: options.basePath,
    trustedProxyHops: options.trustedProxyHops
  })
}
