import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Webhooks } from "../../services/Webhooks.js"
import { EngineApi } from "../Api.js"
import { CurrentCaller } from "../middleware.js"
import { deliveryView } from "../views.js"

export const WebhooksHandlers = HttpApiBuilder.group(EngineApi, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const page = yield* webhooks.list(yield* CurrentCaller, query)
          return { deliveries: page.deliveries.map(deliveryView), nextCursor: page.nextCursor, hasMore: page.hasMore }
        }))
      .handle("retry", ({ params }) =>
        Effect.gen(function*() {
          return deliveryView(yield* webhooks.retry(yield* CurrentCaller, params.id))
        }))
  }))
