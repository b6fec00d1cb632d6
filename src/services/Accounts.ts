import { Clock, Context, Effect, Layer, Option } from "effect"
import type { Scope } from "../domain/account.js"
import { type Budget, isoOrNull, periodEnd, periodStart } from "../domain/budget.js"
import type { OperationNotAllowed } from "../domain/accessRefusals.js"
import type { StoreError, ValidationError } from "../domain/errors.js"
import type { SpendGroup, SpendQuery } from "../domain/spend.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { AdminReadRepo } from "../ports/AdminReadRepo.js"
import { readSpendQuery, type SpendRequest } from "./AdminReads.js"
import { type Caller, requireScope } from "./Auth.js"

/** A budget as its holder sees it: the limit, what the current period has spent, when it resets. */
export interface BudgetStatus {
  readonly limitMicroCents: number
  readonly period: Budget["period"]
  readonly spentMicroCents: number
  /** ISO time the period ends; null for `total`. */
  readonly resetsAt: string | null
}

/**
 * What a key holder may know of their own account: the balance and limits, and the key they
 * called with. No secrets: the webhook secret and the key's hash stay with the operator.
 */
export interface AccountOverview {
  readonly account: {
    readonly id: string
    readonly name: string
    readonly balanceMicroCents: number
    readonly maxConcurrentJobs: number
    /** Pending and processing jobs: what counts against `maxConcurrentJobs`. */
    readonly jobsInFlight: number
    readonly budget: BudgetStatus | null
  }
  readonly key: {
    readonly id: string
    readonly name: string
    readonly scopes: ReadonlyArray<Scope>
    readonly allowedIPs: ReadonlyArray<string>
    readonly expiresAt: number | null
    readonly budget: BudgetStatus | null
  }
}

export const make = Effect.gen(function*() {
  const accounts = yield* AccountRepo
  const reads = yield* AdminReadRepo

  /** A budget as its holder sees it, with what its current period has spent. */
  const statusOf = (budget: Budget | null | undefined, now: number, spent: number | null): BudgetStatus | null =>
    budget == null ? null : {
      limitMicroCents: budget.limitMicroCents,
      period: budget.period,
      spentMicroCents: spent ?? 0,
      resetsAt: isoOrNull(periodEnd(budget.period, now))
    }

  /** Any active key may read its own account, whatever its scopes: it needs none to know its limits. */
  const overview = ({ account, key }: Caller): Effect.Effect<AccountOverview, StoreError> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      // The caller's account may come from the key cache (storeCache.ts): its balance is read now.
      const sinceOf = (budget: Budget | null | undefined) => budget == null ? undefined : periodStart(budget.period, now)
      const [stored, jobsInFlight, spent] = yield* Effect.all([
        accounts.get(account.id),
        accounts.activeJobs(account.id),
        account.budget == null && key.budget == null
          ? Effect.succeed({ accountSpent: null, keySpent: null })
          : reads.budgetSpend({ accountId: account.id, keyId: key.id, since: { account: sinceOf(account.budget), key: sinceOf(key.budget) } })
      ])
      const accountBudget = statusOf(account.budget, now, spent.accountSpent)
      const keyBudget = statusOf(key.budget, now, spent.keySpent)
      return {
        account: {
          id: account.id,
          name: account.name,
          balanceMicroCents: Option.match(stored, { onNone: () => account.balanceMicroCents, onSome: (a) => a.balanceMicroCents }),
          maxConcurrentJobs: account.maxConcurrentJobs,
          jobsInFlight,
          budget: accountBudget
        },
        key: {
          id: key.id,
          name: key.name,
          scopes: key.scopes,
          allowedIPs: key.allowedIPs,
          expiresAt: key.expiresAt,
          budget: keyBudget
        }
      }
    })

  /** The caller's own account's spend (scope check_status), by key, model or day. */
  const spend = (
    caller: Caller,
    request: SpendRequest
  ): Effect.Effect<{ readonly query: SpendQuery; readonly groups: ReadonlyArray<SpendGroup> }, OperationNotAllowed | ValidationError | StoreError> =>
    Effect.gen(function*() {
      yield* requireScope(caller, "check_status")
      const query = yield* readSpendQuery(request, caller.account.id, ["key", "model", "day", "hour"])
      return { query, groups: yield* reads.spend(query) }
    })

  return { overview: Effect.fn("Accounts.overview")(overview), spend: Effect.fn("Accounts.spend")(spend) } as const
})

export class Accounts extends Context.Service<Accounts, Effect.Success<typeof make>>()("genjobs/Accounts") {
  static readonly layer = Layer.effect(Accounts, make)
}
