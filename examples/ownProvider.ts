import { Effect } from "effect"
import { type GenerationProvider, ProviderRejected, type ProviderStatus, ProviderUnreachable, type Recovered } from "genjobs"

/**
 * A provider for a made-up HTTP API: POST /jobs starts a generation and answers {id};
 * GET /jobs/{id} answers {status: "running" | "done" | "failed", url?, error?}; DELETE cancels.
 */
export const makeAcmeProvider = (baseUrl: string, apiKey: string): GenerationProvider => {
  const call = <A>(method: string, path: string, body?: unknown) =>
    Effect.tryPromise({
      try: (signal) =>
        fetch(`${baseUrl}${path}`, {
          method,
          signal,
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        }),
      catch: () => new ProviderUnreachable({ message: `acme did not answer ${method} ${path}` })
    }).pipe(
      Effect.flatMap((response) =>
        response.ok
          ? Effect.promise(() => response.json() as Promise<A>)
          : Effect.fail(new ProviderRejected({
            message: `acme answered ${response.status}`,
            retryable: response.status === 429 || response.status >= 500,
            httpStatus: response.status,
            ...(response.headers.has("retry-after") ? { retryAfterMs: Number(response.headers.get("retry-after")) * 1000 } : {})
          }))
      )
    )

  return {
    start: (request) =>
      call<{ id: string }>("POST", "/jobs", { model: request.providerModel, input: request.input, key: request.idempotencyKey })
        .pipe(Effect.map(({ id }) => ({ _tag: "Started", handle: { id } }) as const)),
    poll: (handle, request) =>
      call<{ status: string; url?: string; error?: string }>("GET", `/jobs/${handle.id}`).pipe(
        Effect.map((job): ProviderStatus =>
          job.status === "done"
            ? { _tag: "Succeeded", outputs: [{ type: "image", source: { _tag: "Url", url: job.url! } }] }
            : job.status === "failed"
            ? { _tag: "Failed", message: job.error ?? `acme could not make ${request.providerModel}` }
            : { _tag: "Running" }
        )
      ),
    cancel: (handle) => Effect.asVoid(call("DELETE", `/jobs/${handle.id}`)),
    // Nothing found is Unknown: NotStarted (start afresh) only if acme's lookup sees every job at once.
    recover: (request) =>
      call<{ id: string | null }>("GET", `/jobs?key=${request.idempotencyKey}`).pipe(
        Effect.map(({ id }): Recovered => (id === null ? { _tag: "Unknown" } : { _tag: "Found", handle: { id } }))
      ),
    pollIntervalMs: 2_000
  }
}
