import { Layer } from "effect"
import { FetchHttpClient, type HttpClient } from "effect/http"
import { request as httpRequest, type IncomingMessage } from "node:http"
import { request as httpsRequest } from "node:https"
import { Readable } from "node:stream"
import { AddressRefused, outputUrlRefusal } from "../../src/domain/publicAddress.js"
import { checkedLookup } from "./checkedLookup.js"

export interface GuardedFetchOptions {
  /** Lets downloads reach private and loopback addresses: simulators and providers on a private network. */
  readonly allowPrivate: boolean
}

/** Statuses whose answer has no body: a web `Response` refuses one. */
const NULL_BODY = new Set([101, 103, 204, 205, 304])

const responseOf = (res: IncomingMessage, method: string): Response => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(res.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one)
  }
  const status = res.statusCode ?? 502
  const empty = NULL_BODY.has(status) || method === "HEAD"
  if (empty) res.resume()
  return new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
    status,
    statusText: res.statusMessage ?? "",
    headers
  })
}

/**
 * A `fetch` for bodiless requests (output downloads are GETs) that dials only checked addresses:
 * an address in the URL is judged before connecting, a name through `checkedLookup`, so a name
 * that resolves to a private address is refused with no connection made. Redirects are answered,
 * not followed: whoever follows one sends it through here again, so every hop is checked. A
 * fresh connection per request (no keep-alive pool), as the webhook sender does.
 */
export const guardedFetch = (options: GuardedFetchOptions): typeof globalThis.fetch => (input, init) =>
  new Promise<Response>((resolve, reject) => {
    const url = new URL(input instanceof Request ? input.url : String(input))
    const method = (init?.method ?? "GET").toUpperCase()
    const refusal = outputUrlRefusal(url.href, options.allowPrivate)
    if (refusal !== undefined) return reject(new AddressRefused({ message: `refused: ${refusal}` }))
    const send = url.protocol === "https:" ? httpsRequest : httpRequest
    if (init?.body !== undefined && init.body !== null) return reject(new TypeError("this fetch sends no request body"))
    const headers: Record<string, string> = {}
    new Headers(init?.headers).forEach((value, name) => (headers[name] = value))
    const req = send(url, {
      method,
      headers,
      lookup: checkedLookup(options.allowPrivate),
      agent: false,
      ...(init?.signal ? { signal: init.signal } : {})
    }, (res) => {
      try {
        resolve(responseOf(res, method))
      } catch (error) {
        res.destroy()
        reject(error)
      }
    })
    req.on("error", reject)
    req.end()
  })

/**
 * The HttpClient the engine downloads providers' output files with by default (`layerEngine`,
 * `makeEngine`): `FetchHttpClient` over `guardedFetch`.
 */
export const layerGuardedHttpClient = (options: GuardedFetchOptions): Layer.Layer<HttpClient.HttpClient> =>
  FetchHttpClient.layer.pipe(Layer.provide(Layer.succeed(FetchHttpClient.Fetch, guardedFetch(options))))
