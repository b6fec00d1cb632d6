import { Effect, Layer, Option } from "effect"
import type { Account, LedgerEntry, LedgerKind } from "../../src/domain/account.js"
import { type AccountId, newLedgerEntryId } from "../../src/domain/ids.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import type { MemoryState } from "./state.js"

/** Moves a balance and writes its ledger line; the caller holds the lock. */
export const post = (
  state: MemoryState,
  accountId: AccountId,
  kind: LedgerKind,
  amountMicroCents: number,
  jobId: string | null,
  now: number
): Account => {
  const account = state.accounts.get(accountId)!
  const updated = { ...account, balanceMicroCents: account.balanceMicroCents + amountMicroCents }
  state.accounts.set(accountId, updated)
  const entry: LedgerEntry = { id: newLedgerEntryId(now), accountId, jobId, kind, amountMicroCents, createdAt: now }
  state.ledger.push(entry)
  return updated
}

export const accountRepo = (state: MemoryState): AccountRepo["Service"] => {
  const atomically = state.lock.withPermits(1)
  return {
    create: (account, initialCredit) =>
      atomically(Effect.sync(() => {
        state.accounts.set(account.id, { ...account, balanceMicroCents: 0 })
        return initialCredit > 0
          ? post(state, account.id, "credit", initialCredit, null, account.createdAt)
          : state.accounts.get(account.id)!
      })),
    get: (id) => Effect.sync(() => Option.fromNullishOr(state.accounts.get(id))),
    addCredits: (id, amount, now) =>
      atomically(Effect.sync(() => (state.accounts.has(id) ? Option.some(post(state, id, "credit", amount, null, now)) : Option.none()))),
    rotateWebhookSecret: (id, secret, previousExpiresAt) =>
      atomically(Effect.sync(() => {
        const account = state.accounts.get(id)
        if (account === undefined) return Option.none()
        const rotated = {
          ...account,
          webhookSecret: secret,
          previousWebhookSecret: account.webhookSecret,
          previousWebhookSecretExpiresAt: previousExpiresAt
        }
        state.accounts.set(id, rotated)
        return Option.some(rotated)
      })),
    ledger: (id) => Effect.sync(() => state.ledger.filter((e) => e.accountId === id)),
    count: Effect.sync(() => state.accounts.size),
    activeJobs: (id) =>
      Effect.sync(() => state.jobs.activeOf(id))
  }
}

export const apiKeyRepo = (state: MemoryState): ApiKeyRepo["Service"] => ({
  create: (key) => Effect.sync(() => void state.keys.set(key.id, key)),
  findByHash: (hash) => Effect.sync(() => Option.fromNullishOr([...state.keys.values()].find((k) => k.hash === hash))),
  findWithAccount: (hash) =>
    Effect.sync(() =>
      Option.map(
        Option.fromNullishOr([...state.keys.values()].find((k) => k.hash === hash)),
        (key) => ({ key, account: Option.fromNullishOr(state.accounts.get(key.accountId)) })
      )
    ),
  deactivate: (id) =>
    Effect.sync(() => {
      const key = state.keys.get(id)
      if (key === undefined) return Option.none()
      const updated = { ...key, active: false }
      state.keys.set(id, updated)
      return Option.some(updated)
    })
})

export const layerAccounts = (state: MemoryState) =>
  Layer.mergeAll(Layer.succeed(AccountRepo, accountRepo(state)), Layer.succeed(ApiKeyRepo, apiKeyRepo(state)))
