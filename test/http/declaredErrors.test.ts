import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import type { Engine } from "genjobs"
import { makeEffectClient } from "genjobs/client/effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ModelNotFound } from "../../src/domain/catalog.js"
import { StoreError, ValidationError } from "../../src/domain/errors.js"
import { JobCannotBeCancelled } from "../../src/domain/job.js"
import type { CatalogGroup, JobsGroup } from "../../src/http/Api.js"
import { newKey, type Target } from "../client/suite.js"
import { webHandlerTarget } from "../client/webHandlerTarget.js"

/*
 * What a handler may fail with is what its endpoint declares and its middleware's errors (as
 * HttpApiBuilder's `handle` types it): checked by the type checker (`tsc --noEmit -p .` covers
 * this file), so each `@ts-expect-error` below fails the check the day an endpoint's type widens.
 */
type EndpointOf<Group extends HttpApiGroup.Constraint, Id extends string> = HttpApiEndpoint.WithIdentifier<HttpApiGroup.Endpoints<Group>, Id>
type HandlerError<Group extends HttpApiGroup.Constraint, Id extends string> =
  | EndpointOf<Group, Id>["~Error"]["Type"]
  | HttpApiEndpoint.MiddlewareError<EndpointOf<Group, Id>>
const failing = <E>(error: E): Effect.Effect<never, E> => Effect.fail(error)

// Cancel declares JOB_CANNOT_BE_CANCELLED, and any handler may meet the store's failures.
export const cancelRefused: Effect.Effect<never, HandlerError<typeof JobsGroup, "cancel">> = failing(new JobCannotBeCancelled({ message: "m" }))
export const cancelStoreDown: Effect.Effect<never, HandlerError<typeof JobsGroup, "cancel">> = failing(new StoreError({ message: "m" }))
// @ts-expect-error list does not declare JOB_CANNOT_BE_CANCELLED
export const listRefused: Effect.Effect<never, HandlerError<typeof JobsGroup, "list">> = failing(new JobCannotBeCancelled({ message: "m" }))
// @ts-expect-error cancel's own rules raise no VALIDATION_ERROR, so its handler may not either
export const cancelInvalid: Effect.Effect<never, HandlerError<typeof JobsGroup, "cancel">> = failing(new ValidationError({ message: "m" }))
export const catalogModelMissing: Effect.Effect<never, HandlerError<typeof CatalogGroup, "model">> = failing(new ModelNotFound({ message: "m" }))
// @ts-expect-error the catalog list finds no model missing
export const catalogListMissing: Effect.Effect<never, HandlerError<typeof CatalogGroup, "models">> = failing(new ModelNotFound({ message: "m" }))

const ORIGIN = "http://engine.test"

let engine: Engine
let target: Target
beforeAll(async () => {
  ({ engine, target } = await webHandlerTarget(0))
})
afterAll(() => engine.dispose())

describe("errors an endpoint does not declare", () => {
  const viaEngine = FetchHttpClient.layer.pipe(
    Layer.provide(Layer.succeed(FetchHttpClient.Fetch, (input, init) => engine.fetch(new Request(input, init))))
  )

  it("are still read by the Effect client when any request may be answered them (a body over the cap)", async () => {
    const apiKey = await newKey(target)
    const refused = await Effect.gen(function*() {
      const client = yield* makeEffectClient({ baseUrl: ORIGIN, apiKey })
      // Estimate declares no PAYLOAD_TOO_LARGE of its own: every middleware declares it for reading.
      return yield* client.jobs.estimate({ payload: { model: "demo/image-gen", input: { prompt: "x".repeat(2_000_000) } } }).pipe(Effect.flip)
    }).pipe(Effect.provide(viaEngine), Effect.runPromise)
    expect(refused).toMatchObject({ success: false, error: { code: "PAYLOAD_TOO_LARGE" } })
  })
})
