import { Context, type Effect, type Option } from "effect"
import type { Account, ApiKey } from "../domain/account.js"
import type { Budget } from "../domain/budget.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId, ApiKeyId } from "../domain/ids.js"

/** The settings of an account an operator may change; the balance moves only through the ledger. */
export type AccountPatch = Partial<Pick<Account, "name" | "maxConcurrentJobs" | "segments" | "allowedModels" | "discounts" | "budget" | "fairShareWeight" | "standardWebhooks">>

export class AccountSettingsRepo extends Context.Service<AccountSettingsRepo, {
  /** Sets the fields the patch holds; None when there is no such account. */
  readonly update: (id: AccountId, patch: AccountPatch) => Effect.Effect<Option.Option<Account>, StoreError>
  /** Sets the key's budget (null: none); None when there is no such key. */
  readonly updateKeyBudget: (id: ApiKeyId, budget: Budget | null) => Effect.Effect<Option.Option<ApiKey>, StoreError>
}>()("genjobs/AccountSettingsRepo") {}
