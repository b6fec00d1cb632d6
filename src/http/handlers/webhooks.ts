import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Webhooks } from "../../services/Webhooks.js"
import { EngineApi } from "../Api.js"
import { CurrentCaller } from "../middleware.js"
import { deliveryView } from "../views.js"

export const WebhooksHandlers = HttpApiBuilder.group(EngineApi, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const page = yield* webhooks.list(yield* CurrentCaller, urlParams)
          return { deliveries: page.deliveries.map(deliveryView), nextCursor: page.nextCursor, hasMore: page.hasMore }
        }))
      .handle("retry", ({ path }) =>
        Effect.gen(function*() {
          return deliveryView(yield* webhooks.retry(yield* CurrentCaller, path.id))
        }))
  }))
