import { Clock, Context, Effect, Layer, Option } from "effect"
import { hasScope, ipAllowed } from "../domain/access.js"
import type { Account, ApiKey, Scope } from "../domain/account.js"
import { hashKeySecret, isWellFormedKey, sameDigest } from "../domain/apiKeySecret.js"
import { engineError, type EngineError, type StoreError } from "../domain/errors.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { ApiKeyRepo } from "../ports/ApiKeyRepo.js"

/** What a request presents: the raw headers and the client address as the server saw it. */
export interface Credentials {
  readonly authorization?: string | undefined
  readonly apiKey?: string | undefined
  readonly clientIp?: string | undefined
}

export interface Caller {
  readonly account: Account
  readonly key: ApiKey
}

const presentedSecret = (credentials: Credentials): Effect.Effect<string, EngineError> => {
  if (credentials.apiKey !== undefined && credentials.apiKey.trim() !== "") {
    return Effect.succeed(credentials.apiKey.trim())
  }
  const header = credentials.authorization?.trim()
  if (header === undefined || header === "") {
    return Effect.fail(engineError("UNAUTHORIZED", "An API key is required: send Authorization: Bearer <key>"))
  }
  const match = /^Bearer\s+(\S+)$/i.exec(header)
  return match === null
    ? Effect.fail(engineError("INVALID_API_KEY", "The Authorization header must be 'Bearer <key>'"))
    : Effect.succeed(match[1]!)
}

export const requireScope = (caller: Caller, scope: Scope): Effect.Effect<void, EngineError> =>
  hasScope(caller.key.scopes, scope)
    ? Effect.void
    : Effect.fail(engineError("OPERATION_NOT_ALLOWED", `This API key lacks the scope ${scope}`, { requiredScope: scope }))

export const make = Effect.gen(function*() {
  const keys = yield* ApiKeyRepo
  const accounts = yield* AccountRepo

  const authenticate = (credentials: Credentials): Effect.Effect<Caller, EngineError | StoreError> =>
    Effect.gen(function*() {
      const secret = yield* presentedSecret(credentials)
      // Made only on a refusal: errors capture a stack trace when made, a cost every request would pay.
      const invalid = () => engineError("INVALID_API_KEY", "The API key does not exist or is malformed")
      if (!isWellFormedKey(secret)) return yield* Effect.fail(invalid())
      const hash = hashKeySecret(secret)
      const key = yield* keys.findByHash(hash)
      if (Option.isNone(key) || !sameDigest(key.value.hash, hash)) return yield* Effect.fail(invalid())
      if (!key.value.active) return yield* Effect.fail(engineError("API_KEY_INACTIVE", "This API key has been deactivated"))
      const now = yield* Clock.currentTimeMillis
      if (key.value.expiresAt !== null && key.value.expiresAt <= now) {
        return yield* Effect.fail(engineError("API_KEY_EXPIRED", "This API key has expired"))
      }
      if (!ipAllowed(key.value.allowedIPs, credentials.clientIp)) {
        return yield* Effect.fail(
          engineError("IP_NOT_WHITELISTED", "Requests from this address are not allowed for this API key", {
            ip: credentials.clientIp ?? null
          })
        )
      }
      const account = yield* accounts.get(key.value.accountId)
      if (Option.isNone(account)) return yield* Effect.fail(invalid())
      return { account: account.value, key: key.value }
    })

  return { authenticate } as const
})

export class Auth extends Context.Tag("genjobs/Auth")<Auth, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Auth, make)
}
