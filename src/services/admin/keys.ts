import { Clock, Effect, Option } from "effect"
import { invalidAllowedEntries } from "../../domain/access.js"
import type { ApiKey, ApiKeyUpdate, NewApiKey } from "../../domain/account.js"
import { generateKeySecret, hashKeySecret, keyHint } from "../../domain/apiKeySecret.js"
import { type AuditActor, SYSTEM_ACTOR } from "../../domain/audit.js"
import { NotFound, type StoreError, ValidationError } from "../../domain/errors.js"
import { type ApiKeyId, newApiKeyId } from "../../domain/ids.js"
import { getAccount } from "./accounts.js"
import { audited, iso } from "./audited.js"
import type { AdminDeps } from "./deps.js"

export interface CreatedKey {
  readonly record: ApiKey
  /** The secret: shown once, never stored. */
  readonly secret: string
}

const keyNotFound = (id: string) => new NotFound({ message: `No API key "${id}"`, details: { keyId: id } })

export const createKey = (deps: Pick<AdminDeps, "accounts" | "audit" | "keys">) =>
(accountId: string, input: NewApiKey, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<CreatedKey, ValidationError | NotFound | StoreError> =>
  audited(deps, by, "key.create", Effect.gen(function*() {
    const account = yield* getAccount(deps)(accountId)
    const invalid = invalidAllowedEntries(input.allowedIPs)
    if (invalid.length > 0) {
      return yield* Effect.fail(
        new ValidationError({ message: "allowedIPs holds entries that are neither an IP address nor a CIDR range", details: {
          field: "allowedIPs",
          invalid
        } })
      )
    }
    const now = yield* Clock.currentTimeMillis
    const expiresAt = input.expiresAt === null ? null : input.expiresAt.epochMilliseconds
    if (expiresAt !== null && expiresAt <= now) {
      return yield* Effect.fail(new ValidationError({ message: "expiresAt must be in the future", details: { field: "expiresAt" } }))
    }
    const secret = generateKeySecret()
    const record: ApiKey = {
      id: newApiKeyId(),
      accountId: account.id,
      name: input.name,
      scopes: [...new Set(input.scopes)],
      allowedIPs: input.allowedIPs.map((e) => e.trim()),
      hash: hashKeySecret(secret),
      hint: keyHint(secret),
      active: true,
      expiresAt,
      ...(input.budget == null ? {} : { budget: input.budget }),
      createdAt: now
    }
    yield* deps.keys.create(record)
    return { record, secret }
  }), ({ record }) => ({
    target: record.id,
    summary: {
      accountId: record.accountId,
      name: record.name,
      hint: record.hint,
      scopes: record.scopes,
      allowedIPs: record.allowedIPs,
      expiresAt: iso(record.expiresAt),
      budget: record.budget ?? null
    }
  }))

/** Sets a key's budget (null removes it); the key's other settings are fixed at creation. */
export const updateKey = (deps: Pick<AdminDeps, "audit" | "settings">) =>
(id: string, update: ApiKeyUpdate, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<ApiKey, NotFound | StoreError> =>
  audited(
    deps,
    by,
    "key.update",
    deps.settings.updateKeyBudget(id as ApiKeyId, update.budget).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(keyNotFound(id)), onSome: Effect.succeed }))
    ),
    (key) => ({ target: key.id, summary: { accountId: key.accountId, budget: update.budget } })
  )

export const deactivateKey = (deps: Pick<AdminDeps, "audit" | "keys">) =>
(id: string, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<ApiKey, NotFound | StoreError> =>
  audited(
    deps,
    by,
    "key.deactivate",
    deps.keys.deactivate(id as ApiKeyId).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(keyNotFound(id)), onSome: Effect.succeed }))
    ),
    (key) => ({ target: key.id, summary: { accountId: key.accountId, name: key.name, hint: key.hint } })
  )
