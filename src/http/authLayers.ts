import { Context, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { timingSafeEqual } from "node:crypto"
import { NotFound } from "../domain/errors.js"
import { InvalidApiKey, Unauthorized } from "../domain/accessRefusals.js"
import { noteRequestAccount } from "../observability/requestLog.js"
import { Auth, type Credentials } from "../services/Auth.js"
import { AuthThrottle } from "../services/AuthThrottle.js"
import { DEFAULT_ADMIN_NAME } from "./adminTokens.js"
import { HttpConfig } from "./HttpConfig.js"
import { queueingFailures } from "./errorMiddleware.js"
import { AdminAuth, ApiKeyAuth, CurrentAdmin, CurrentCaller, CurrentViewer, OptionalApiKeyAuth } from "./middleware.js"
import { clientAddress } from "./requestContext.js"

/** The credentials the request being served presents, read off it in place (no effect per header). */
const requestCredentials = Effect.map(HttpConfig, ({ trustedProxyHops }) => (context: Context.Context<never>): Credentials => {
  const request = Context.getUnsafe(context as Context.Context<HttpServerRequest.HttpServerRequest>, HttpServerRequest.HttpServerRequest)
  return {
    authorization: request.headers["authorization"],
    apiKey: request.headers["x-api-key"],
    clientIp: clientAddress(request, context, trustedProxyHops)
  }
})

/** The key's check, behind the guessing throttle of the client's address. */
const authenticated = (auth: Auth["Service"], throttle: AuthThrottle["Service"], credentials: Credentials) =>
  throttle.guard(credentials.clientIp, Effect.tap(auth.authenticate(credentials), (c) => noteRequestAccount(c.account.id)))

export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.gen(function*() {
    const auth = yield* Auth
    const throttle = yield* AuthThrottle
    const credentialsOf = yield* requestCredentials
    return ApiKeyAuth.of((httpEffect, { endpoint, group }) => {
      const served = Effect.withFiber((fiber) =>
        Effect.flatMap(
          authenticated(auth, throttle, credentialsOf(fiber.context)),
          (caller) => Effect.provideService(httpEffect, CurrentCaller, caller)
        )
      )
      // Decided once per route, as HttpApi applies a middleware when it builds the route. The
      // PUBSUB_PUBLISH_FAILED it adds there is declared by the submit endpoint itself, not by this
      // check, so no other endpoint's handler may raise it: hence the cast.
      return group.identifier === "jobs" && endpoint.identifier === "submit" ? queueingFailures(served) as typeof served : served
    })
  })
).pipe(Layer.provide(AuthThrottle.layer))

export const OptionalApiKeyAuthLive = Layer.effect(
  OptionalApiKeyAuth,
  Effect.gen(function*() {
    const auth = yield* Auth
    const throttle = yield* AuthThrottle
    const credentialsOf = yield* requestCredentials
    return OptionalApiKeyAuth.of((httpEffect) =>
      Effect.withFiber((fiber) => {
        const credentials = credentialsOf(fiber.context)
        const presented = credentials.authorization !== undefined || credentials.apiKey !== undefined
        const viewer = presented ? Effect.map(authenticated(auth, throttle, credentials), Option.some) : Effect.succeed(Option.none())
        return Effect.flatMap(viewer, (caller) => Effect.provideService(httpEffect, CurrentViewer, caller))
      })
    )
  })
).pipe(Layer.provide(AuthThrottle.layer))

/** Compares secrets in constant time. */
export const sameSecret = (a: string, b: string): boolean => {
  const ba = Buffer.from(a)
  const bb = Buffer.from(b)
  return ba.length === bb.length && timingSafeEqual(ba, bb)
}

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const { adminToken, adminTokens, trustedProxyHops } = yield* HttpConfig
    const throttle = yield* AuthThrottle
    const tokens = [
      ...(adminToken === undefined ? [] : [{ name: DEFAULT_ADMIN_NAME, token: adminToken }]),
      ...adminTokens
    ].map(({ name, token }) => ({ name, token: Redacted.value(token) }))
    const admin = Effect.gen(function*() {
      if (tokens.length === 0) {
        return yield* new NotFound({ message: "The admin API is off: set ADMIN_TOKEN or ADMIN_TOKENS to turn it on" })
      }
      const request = yield* HttpServerRequest.HttpServerRequest
      const client = clientAddress(request, yield* Effect.context<never>(), trustedProxyHops)
      return yield* throttle.guard(client, Effect.gen(function*() {
        const match = /^Bearer\s+(\S+)$/i.exec(request.headers["authorization"] ?? "")
        if (match === null) return yield* new Unauthorized({ message: "Send Authorization: Bearer <admin token>" })
        // Every token is compared, so the time taken does not tell which one came close.
        const matched = tokens.filter(({ token }) => sameSecret(match[1]!, token))
        if (matched.length === 0) return yield* new InvalidApiKey({ message: "The admin token is wrong" })
        return { actor: matched[0]!.name }
      }))
    })
    return AdminAuth.of((httpEffect) => Effect.flatMap(admin, (who) => Effect.provideService(httpEffect, CurrentAdmin, who)))
  })
).pipe(Layer.provide(AuthThrottle.layer))
