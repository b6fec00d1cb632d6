import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option, Redacted } from "effect"
import { timingSafeEqual } from "node:crypto"
import { engineError } from "../domain/errors.js"
import { noteRequestAccount } from "../observability/requestLog.js"
import { Auth } from "../services/Auth.js"
import { DEFAULT_ADMIN_NAME } from "./adminTokens.js"
import { HttpConfig } from "./HttpConfig.js"
import { AdminAuth, ApiKeyAuth, OptionalApiKeyAuth } from "./middleware.js"
import { clientAddress, toApiFailure } from "./requestContext.js"

const authenticateRequest = Effect.gen(function*() {
  const auth = yield* Auth
  const { trustedProxyHops } = yield* HttpConfig
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const authorization = request.headers["authorization"]
    const apiKey = request.headers["x-api-key"]
    const credentials = { authorization, apiKey, clientIp: yield* clientAddress(trustedProxyHops) }
    const caller = Effect.tap(auth.authenticate(credentials), (c) => noteRequestAccount(c.account.id))
    return { presented: authorization !== undefined || apiKey !== undefined, caller }
  })
})

export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.map(authenticateRequest, (read) => read.pipe(Effect.flatMap((r) => r.caller), toApiFailure))
)

export const OptionalApiKeyAuthLive = Layer.effect(
  OptionalApiKeyAuth,
  Effect.map(authenticateRequest, (read) =>
    read.pipe(
      Effect.flatMap((r) => (r.presented ? Effect.map(r.caller, Option.some) : Effect.succeed(Option.none()))),
      toApiFailure
    ))
)

/** Compares secrets in constant time. */
export const sameSecret = (a: string, b: string): boolean => {
  const ba = Buffer.from(a)
  const bb = Buffer.from(b)
  return ba.length === bb.length && timingSafeEqual(ba, bb)
}

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const { adminToken, adminTokens } = yield* HttpConfig
    const tokens = [
      ...(adminToken === undefined ? [] : [{ name: DEFAULT_ADMIN_NAME, token: adminToken }]),
      ...adminTokens
    ].map(({ name, token }) => ({ name, token: Redacted.value(token) }))
    return Effect.gen(function*() {
      if (tokens.length === 0) {
        return yield* Effect.fail(engineError("NOT_FOUND", "The admin API is off: set ADMIN_TOKEN or ADMIN_TOKENS to turn it on"))
      }
      const request = yield* HttpServerRequest.HttpServerRequest
      const match = /^Bearer\s+(\S+)$/i.exec(request.headers["authorization"] ?? "")
      if (match === null) return yield* Effect.fail(engineError("UNAUTHORIZED", "Send Authorization: Bearer <admin token>"))
      // Every token is compared, so the time taken does not tell which one came close.
      const matched = tokens.filter(({ token }) => sameSecret(match[1]!, token))
      if (matched.length === 0) return yield* Effect.fail(engineError("INVALID_API_KEY", "The admin token is wrong"))
      return { actor: matched[0]!.name }
    }).pipe(toApiFailure)
  })
)
