import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Uploads } from "../../services/Uploads.js"
import { EngineApi } from "../Api.js"
import { CurrentCaller } from "../middleware.js"
import { CurrentRequestId } from "../requestContext.js"
import { iso } from "../views.js"

/** Upload answers use the spec's {success, data, requestId} envelope. */
const enveloped = <A>(data: A) =>
  Effect.gen(function*() {
    return { success: true as const, data, requestId: yield* CurrentRequestId }
  })

export const UploadsHandlers = HttpApiBuilder.group(EngineApi, "uploads", (handlers) =>
  Effect.gen(function*() {
    const uploads = yield* Uploads
    return handlers
      .handle("presign", ({ payload }) =>
        Effect.gen(function*() {
          const result = yield* uploads.presign(yield* CurrentCaller, payload)
          return yield* enveloped({ ...result, expiresAt: iso(result.expiresAt) })
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const u = yield* uploads.get(yield* CurrentCaller, params.id)
          return yield* enveloped({
            id: u.id,
            filename: u.filename,
            contentType: u.contentType,
            fileUrl: u.fileUrl,
            status: u.status,
            createdAt: iso(u.createdAt),
            expiresAt: iso(u.expiresAt)
          })
        }))
  }))
