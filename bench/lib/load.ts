import { createRequire } from "node:module"

// autocannon ships no types; this is the part of its API used here.
interface AutocannonResult {
  readonly duration: number
  readonly "2xx": number
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  readonly latency: { readonly p50: number; readonly p99: number }
}
interface AutocannonRequest {
  readonly method: string
  readonly path: string
  readonly headers?: Record<string, string>
  readonly body?: string
  readonly setupRequest?: (request: AutocannonRequest) => AutocannonRequest
}
type Autocannon = (
  options: Record<string, unknown> & { readonly requests: ReadonlyArray<AutocannonRequest> },
  done: (error: Error | null, result: AutocannonResult) => void
) => unknown
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon

export interface LoadResult {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly ok: number
  readonly non2xx: number
  readonly errors: number
}

interface LoadOptions {
  readonly url: string
  readonly connections: number
  readonly seconds?: number
  readonly amount?: number
  readonly label: string
  /** A warm-up may end before its first answer (a cold server); a measured run may not. */
  readonly warmup?: boolean
}

/** Runs autocannon; only 2xx answers count: any other answer or socket error fails the figure, so it never times refusals. */
const load = (options: LoadOptions, request: AutocannonRequest): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    autocannon({
      url: options.url,
      connections: options.connections,
      ...(options.amount === undefined ? { duration: options.seconds ?? 10 } : { amount: options.amount }),
      timeout: 30,
      requests: [request]
    }, (error, result) => {
      if (error !== null) return reject(error)
      const failed = result.non2xx + result.errors + result.timeouts
      if (failed > 0 || (result["2xx"] === 0 && options.warmup !== true)) {
        return reject(new Error(
          `${options.label}: ${result.non2xx} non-2xx answers, ${result.errors} errors, ${result.timeouts} timeouts of ${result["2xx"] + failed}`
        ))
      }
      resolve({
        rps: result["2xx"] / result.duration,
        p50: result.latency.p50,
        p99: result.latency.p99,
        ok: result["2xx"],
        non2xx: result.non2xx,
        errors: result.errors + result.timeouts
      })
    })
  })

/**
 * POSTs a job submit to `url` over `connections` keep-alive connections, for `seconds` or until
 * `amount` requests, each with the next key of `keys` in turn.
 */
export const submitLoad = (options: LoadOptions & { readonly keys: ReadonlyArray<string>; readonly model: string }): Promise<LoadResult> => {
  let turn = 0
  return load(options, {
    method: "POST",
    path: "/v1/jobs/submit",
    body: JSON.stringify({ model: options.model, input: { prompt: "a short bench prompt" } }),
    setupRequest: (request) => ({
      ...request,
      headers: { "content-type": "application/json", authorization: `Bearer ${options.keys[turn++ % options.keys.length]}` }
    })
  })
}

/** GETs `path` of `url` over `connections` keep-alive connections. */
export const getLoad = (options: LoadOptions & { readonly path: string }): Promise<LoadResult> =>
  load(options, { method: "GET", path: options.path })

/**
 * One submit by hand before a load run, so a refusal fails with its message rather than a count;
 * answers the submit's JSON answer.
 */
export const probeSubmit = async (url: string, key: string, model: string): Promise<Record<string, unknown>> => {
  const response = await fetch(`${url}/v1/jobs/submit`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, input: { prompt: "probe" } })
  })
  if (!response.ok) throw new Error(`probe submit to ${url} answered ${response.status}: ${await response.text()}`)
  return await response.json() as Record<string, unknown>
}
