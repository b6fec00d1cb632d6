import { Clock, Context, Effect, Layer, Option } from "effect"
import { hasScope, ipAllowed } from "../domain/access.js"
import { ApiKeyExpired, ApiKeyInactive, InvalidApiKey, IpNotWhitelisted, OperationNotAllowed, Unauthorized } from "../domain/accessRefusals.js"
import type { Account, ApiKey, Scope } from "../domain/account.js"
import { hashKeySecret, isWellFormedKey, sameDigest } from "../domain/apiKeySecret.js"
import type { StoreError } from "../domain/errors.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { ApiKeyRepo } from "../ports/ApiKeyRepo.js"
import { StoreChanges } from "../ports/StoreChanges.js"
import { makeStoreCache } from "./storeCache.js"

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

/** What an API key's check refuses: no key, a malformed, unknown, inactive or expired one, an address off its list. */
export type KeyRefusal = Unauthorized | InvalidApiKey | ApiKeyInactive | ApiKeyExpired | IpNotWhitelisted

const presentedSecret = (credentials: Credentials): Effect.Effect<string, Unauthorized | InvalidApiKey> => {
  if (credentials.apiKey !== undefined && credentials.apiKey.trim() !== "") {
    return Effect.succeed(credentials.apiKey.trim())
  }
  const header = credentials.authorization?.trim()
  if (header === undefined || header === "") {
    return Effect.fail(new Unauthorized({ message: "An API key is required: send Authorization: Bearer <key>" }))
  }
  const match = /^Bearer\s+(\S+)$/i.exec(header)
  return match === null
    ? Effect.fail(new InvalidApiKey({ message: "The Authorization header must be 'Bearer <key>'" }))
    : Effect.succeed(match[1]!)
}

export const requireScope = (caller: Caller, scope: Scope): Effect.Effect<void, OperationNotAllowed> =>
  hasScope(caller.key.scopes, scope)
    ? Effect.void
    : Effect.fail(new OperationNotAllowed({ message: `This API key lacks the scope ${scope}`, details: { requiredScope: scope } }))

export const make = Effect.gen(function*() {
  const keys = yield* ApiKeyRepo
  const accounts = yield* AccountRepo

  /** The key, with its account when the store reads both at once; otherwise the account is read after the checks. */
  const readKey: (hash: string) => Effect.Effect<Option.Option<{ readonly key: ApiKey; readonly account?: Option.Option<Account> }>, StoreError> =
    keys.findWithAccount ?? ((hash) => Effect.map(keys.findByHash(hash), Option.map((key) => ({ key }))))
  // Stores that tell of changes to keys and accounts let them be cached (storeCache.ts); others are read every time.
  const changes = yield* Effect.serviceOption(StoreChanges)
  const findKey = Option.isSome(changes) ? makeStoreCache(changes.value, "access", readKey) : readKey

  const authenticate = (credentials: Credentials): Effect.Effect<Caller, KeyRefusal | StoreError> =>
    Effect.gen(function*() {
      const secret = yield* presentedSecret(credentials)
      // Made only on a refusal: errors capture a stack trace when made, a cost every request would pay.
      const invalid = () => new InvalidApiKey({ message: "The API key does not exist or is malformed" })
      if (!isWellFormedKey(secret)) return yield* Effect.fail(invalid())
      const hash = hashKeySecret(secret)
      const found = yield* findKey(hash)
      if (Option.isNone(found) || !sameDigest(found.value.key.hash, hash)) return yield* Effect.fail(invalid())
      const key = found.value.key
      if (!key.active) return yield* Effect.fail(new ApiKeyInactive({ message: "This API key has been deactivated" }))
      const now = yield* Clock.currentTimeMillis
      if (key.expiresAt !== null && key.expiresAt <= now) {
        return yield* Effect.fail(new ApiKeyExpired({ message: "This API key has expired" }))
      }
      if (!ipAllowed(key.allowedIPs, credentials.clientIp)) {
        return yield* Effect.fail(
          new IpNotWhitelisted({ message: "Requests from this address are not allowed for this API key", details: {
            ip: credentials.clientIp ?? null
          } })
        )
      }
      const account = found.value.account ?? (yield* accounts.get(key.accountId))
      if (Option.isNone(account)) return yield* Effect.fail(invalid())
      // The account's balance and active jobs may be as old as the key's cache entry: they are
      // not the caller's settings, and whoever needs them reads them (the charge, GET /v1/account).
      return { account: account.value, key }
    })

  return { authenticate: Effect.fn("Auth.authenticate")(authenticate) } as const
})

export class Auth extends Context.Service<Auth, Effect.Success<typeof make>>()("genjobs/Auth") {
  static readonly layer = Layer.effect(Auth, make)
}
