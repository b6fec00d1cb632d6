import { Clock, Effect, Option } from "effect"
import { randomBytes } from "node:crypto"
import type { Account, AccountUpdate, NewAccount } from "../../domain/account.js"
import { type AuditActor, changesBetween, SYSTEM_ACTOR } from "../../domain/audit.js"
import { NotFound, type StoreError, ValidationError } from "../../domain/errors.js"
import { type AccountId, newAccountId } from "../../domain/ids.js"
import { DEFAULT_FAIR_WEIGHT, fairWeightOf } from "../../domain/fairShare.js"
import { MAX_MICRO_CENTS } from "../../domain/limits.js"
import { audited, iso } from "./audited.js"
import type { AdminDeps } from "./deps.js"

type AccountDeps = Pick<AdminDeps, "accounts" | "audit">

export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64url")}`

export const accountNotFound = (id: string) => new NotFound({ message: `No account "${id}"`, details: { accountId: id } })

export const createAccount = (deps: AccountDeps) =>
(input: NewAccount, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<Account, StoreError> =>
  audited(deps, by, "account.create", Effect.gen(function*() {
    const account: Account = {
      id: newAccountId(),
      name: input.name,
      balanceMicroCents: 0,
      maxConcurrentJobs: input.maxConcurrentJobs,
      segments: input.segments,
      allowedModels: input.allowedModels,
      discounts: input.discounts,
      webhookSecret: newWebhookSecret(),
      previousWebhookSecret: null,
      previousWebhookSecretExpiresAt: null,
      standardWebhooks: input.standardWebhooks ?? false,
      ...(input.budget == null ? {} : { budget: input.budget }),
      createdAt: yield* Clock.currentTimeMillis,
      // Absent when it is the default, as the stores answer it.
      ...(input.fairShareWeight === undefined || input.fairShareWeight === DEFAULT_FAIR_WEIGHT ? {} : { fairShareWeight: input.fairShareWeight })
    }
    return yield* deps.accounts.create(account, input.creditsMicroCents)
  }), (account) => ({ target: account.id, summary: { ...input } }))

export const getAccount = ({ accounts }: Pick<AdminDeps, "accounts">) => (id: string): Effect.Effect<Account, NotFound | StoreError> =>
  accounts.get(id as AccountId).pipe(
    Effect.flatMap(Option.match({ onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed }))
  )

/** Sets the settings the update holds; an empty update is refused, so a request that changes nothing is noticed. */
export const updateAccount = (deps: AccountDeps & Pick<AdminDeps, "settings">) =>
(id: string, update: AccountUpdate, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<Account, ValidationError | NotFound | StoreError> =>
  Effect.gen(function*() {
    const fields = Object.entries(update).filter(([, v]) => v !== undefined).map(([k]) => k)
    if (fields.length === 0) {
      return yield* Effect.fail(
        new ValidationError({ message: "Send at least one of name, maxConcurrentJobs, segments, allowedModels, discounts, budget, fairShareWeight, standardWebhooks" })
      )
    }
    const { after } = yield* audited(deps, by, "account.update", Effect.gen(function*() {
      const before = yield* getAccount(deps)(id)
      const updated = yield* deps.settings.update(before.id, update)
      return { before, after: yield* Option.match(updated, { onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed }) }
    }), ({ after, before }) => ({ target: after.id, summary: { changes: changesBetween({ ...before, fairShareWeight: fairWeightOf(before) }, update) } }))
    return after
  })

export const addCredits = (deps: AccountDeps) =>
(id: string, amountMicroCents: number, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<Account, ValidationError | NotFound | StoreError> =>
  audited(deps, by, "account.credit", Effect.gen(function*() {
    if (!Number.isSafeInteger(amountMicroCents) || amountMicroCents <= 0) {
      return yield* Effect.fail(
        new ValidationError({ message: "amountMicroCents must be a positive integer", details: { field: "amountMicroCents" } })
      )
    }
    // A balance stays within MAX_MICRO_CENTS, so it adds up exactly and any charge or refund fits the store.
    const account = yield* getAccount(deps)(id)
    if (amountMicroCents > MAX_MICRO_CENTS - account.balanceMicroCents) {
      return yield* Effect.fail(
        new ValidationError({ message: `The balance would exceed ${MAX_MICRO_CENTS} micro-cents`, details: {
          field: "amountMicroCents",
          balanceMicroCents: account.balanceMicroCents
        } })
      )
    }
    const updated = yield* deps.accounts.addCredits(account.id, amountMicroCents, yield* Clock.currentTimeMillis)
    return yield* Option.match(updated, { onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed })
  }), (account) => ({ target: account.id, summary: { amountMicroCents, balanceMicroCents: account.balanceMicroCents } }))

/** A new secret now; the old one keeps signing beside it for `overlapSeconds`. */
export const rotateWebhookSecret = (deps: AccountDeps) =>
(
  id: string,
  overlapSeconds: number,
  by: AuditActor = SYSTEM_ACTOR
): Effect.Effect<Account, ValidationError | NotFound | StoreError> =>
  Effect.gen(function*() {
    if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > 30 * 24 * 3600) {
      return yield* Effect.fail(
        new ValidationError({ message: "overlapSeconds must be a whole number from 0 to 2592000 (30 days)", details: { field: "overlapSeconds" } })
      )
    }
    const now = yield* Clock.currentTimeMillis
    return yield* audited(
      deps,
      by,
      "account.webhook_secret.rotate",
      deps.accounts.rotateWebhookSecret(id as AccountId, newWebhookSecret(), now + overlapSeconds * 1000).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed }))
      ),
      (account) => ({
        target: account.id,
        summary: { overlapSeconds, previousSecretExpiresAt: iso(account.previousWebhookSecretExpiresAt) }
      })
    )
  })

export const ledger = (deps: Pick<AdminDeps, "accounts">) => (id: string) =>
  getAccount(deps)(id).pipe(Effect.andThen(deps.accounts.ledger(id as AccountId)))
