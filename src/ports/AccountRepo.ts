import { Context, type Effect, type Option } from "effect"
import type { Account, LedgerEntry } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId } from "../domain/ids.js"

/** Accounts and their ledger. A balance only moves together with a ledger entry. */
export class AccountRepo extends Context.Service<AccountRepo, {
  /** Inserts the account with balance 0, then credits `initialCredit` through the ledger. */
  readonly create: (account: Account, initialCredit: number) => Effect.Effect<Account, StoreError>
  readonly get: (id: AccountId) => Effect.Effect<Option.Option<Account>, StoreError>
  readonly addCredits: (
    id: AccountId,
    amountMicroCents: number,
    now: number
  ) => Effect.Effect<Option.Option<Account>, StoreError>
  /** Makes `secret` current and keeps the old one signing until `previousExpiresAt`. */
  readonly rotateWebhookSecret: (
    id: AccountId,
    secret: string,
    previousExpiresAt: number
  ) => Effect.Effect<Option.Option<Account>, StoreError>
  readonly ledger: (id: AccountId) => Effect.Effect<ReadonlyArray<LedgerEntry>, StoreError>
  readonly count: Effect.Effect<number, StoreError>
  /** The account's jobs that count against its maximum (`activeStatuses`: pending and processing). */
  readonly activeJobs: (id: AccountId) => Effect.Effect<number, StoreError>
}>()("genjobs/AccountRepo") {}
