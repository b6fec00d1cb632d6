import { Context, Effect, Layer } from "effect"
import type { Scope } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import type { Caller } from "./Auth.js"

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
  }
  readonly key: {
    readonly id: string
    readonly name: string
    readonly scopes: ReadonlyArray<Scope>
    readonly allowedIPs: ReadonlyArray<string>
    readonly expiresAt: number | null
  }
}

export const make = Effect.gen(function*() {
  const accounts = yield* AccountRepo

  /** Any active key may read its own account, whatever its scopes: it needs none to know its limits. */
  const overview = ({ account, key }: Caller): Effect.Effect<AccountOverview, StoreError> =>
    Effect.map(accounts.activeJobs(account.id), (jobsInFlight) => ({
      account: {
        id: account.id,
        name: account.name,
        balanceMicroCents: account.balanceMicroCents,
        maxConcurrentJobs: account.maxConcurrentJobs,
        jobsInFlight
      },
      key: { id: key.id, name: key.name, scopes: key.scopes, allowedIPs: key.allowedIPs, expiresAt: key.expiresAt }
    }))

  return { overview } as const
})

export class Accounts extends Context.Tag("genjobs/Accounts")<Accounts, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Accounts, make)
}
