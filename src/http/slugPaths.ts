import type { HttpServerRequest } from "effect/http"

/**
 * The spec's slug URLs keep their slashes (`/v1/models/demo/image-gen`). Effect 4's router gives
 * a wildcard route its bare prefix too (`/v1/catalog/models/*` also claims `/v1/catalog/models`,
 * the list), so those URLs cannot have a route of their own: a slug of two or more segments is
 * joined into the one percent-encoded parameter of the documented route
 * (`/v1/models/demo%2Fimage-gen`), which answers alike.
 */
const SLUG_PATH = /^(\/v1\/(?:catalog\/)?models\/)([^/?#]+(?:\/[^/?#]+)+)(\/?(?:[?#].*)?)$/

/** The request with its slug URL's slashes encoded; the request itself when it is no slug URL. */
export const withSlugPathJoined = (request: HttpServerRequest.HttpServerRequest): HttpServerRequest.HttpServerRequest => {
  if (request.method !== "GET" && request.method !== "HEAD") return request
  const match = SLUG_PATH.exec(request.url)
  return match === null ? request : request.modify({ url: `${match[1]}${match[2]!.replaceAll("/", "%2F")}${match[3]}` })
}
