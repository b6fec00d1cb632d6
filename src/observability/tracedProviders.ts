import { Effect, Layer, Option } from "effect"
import { type GenerationProvider, Providers } from "../ports/Provider.js"
import { exporting, inJobSpan } from "./jobSpans.js"

/** A provider whose start, poll and cancel each run in a span of the job's trace. */
export const traceProvider = (providerId: string, provider: GenerationProvider): GenerationProvider => {
  const attributes = (request: { readonly job: { readonly model: string }; readonly providerModel: string }) => ({
    "genjobs.provider": providerId,
    "genjobs.model": request.job.model,
    "genjobs.provider_model": request.providerModel
  })
  return {
    ...provider,
    start: (request) =>
      provider.start(request).pipe(
        Effect.tap((outcome) => Effect.annotateCurrentSpan("genjobs.start_outcome", outcome._tag)),
        inJobSpan("genjobs.provider.start", request.job.id, attributes(request))
      ),
    poll: (handle, request) =>
      provider.poll(handle, request).pipe(
        Effect.tap((status) => Effect.annotateCurrentSpan("genjobs.provider_status", status._tag)),
        inJobSpan("genjobs.provider.poll", request.job.id, { ...attributes(request), "genjobs.provider_handle": handle.id })
      ),
    cancel: (handle, request) =>
      provider.cancel(handle, request).pipe(
        inJobSpan("genjobs.provider.cancel", request.job.id, { ...attributes(request), "genjobs.provider_handle": handle.id })
      )
  }
}

/**
 * The Providers in context, each traced (see traceProvider) when a tracer exports spans, decided
 * once as the engine is built: without one, the providers are called as they are, with no span
 * checks and no annotation (which, with no span to annotate, builds and drops an error per call).
 */
export const layerTracedProviders = Layer.effect(
  Providers,
  Effect.flatMap(exporting, (on) =>
    Effect.map(Providers, (providers) =>
      on
        ? {
          ...providers,
          forProvider: (providerId: string) => Option.map(providers.forProvider(providerId), (p) => traceProvider(providerId, p))
        }
        : providers))
)
