import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Changes, readAfter } from "../../services/Changes.js"
import { EngineApi } from "../Api.js"
import { changeStreamResponse } from "../changeStream.js"
import { changeView } from "../changeViews.js"
import { makeHeartbeats } from "../jobStream.js"
import { CurrentCaller } from "../middleware.js"

export const ChangesHandlers = HttpApiBuilder.group(EngineApi, "changes", (handlers) =>
  Effect.gen(function*() {
    const changes = yield* Changes
    const heartbeats = yield* makeHeartbeats()
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const page = yield* changes.page(yield* CurrentCaller, query)
          return { changes: page.entries.map(changeView), nextCursor: page.nextCursor, hasMore: page.hasMore }
        }))
      .handle("stream", ({ headers, query }) =>
        Effect.gen(function*() {
          const header = headers["last-event-id"]
          const after = header !== undefined && header.trim() !== ""
            ? yield* readAfter(header, "Last-Event-ID")
            : yield* readAfter(query.after, "after")
          return yield* changeStreamResponse(changes, heartbeats, yield* CurrentCaller, after)
        }))
  }))
