import { Context, type Effect, type Option } from "effect"
import type { Account, ApiKey } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import type { ApiKeyId } from "../domain/ids.js"

/** A key with the account it belongs to (None when that account is gone). */
export interface KeyWithAccount {
  readonly key: ApiKey
  readonly account: Option.Option<Account>
}

export class ApiKeyRepo extends Context.Service<ApiKeyRepo, {
  readonly create: (key: ApiKey) => Effect.Effect<void, StoreError>
  readonly findByHash: (hash: string) => Effect.Effect<Option.Option<ApiKey>, StoreError>
  /**
   * `findByHash` and the key's account in one read: what every authenticated request needs.
   * Optional; without it Auth reads the key, then its account.
   */
  readonly findWithAccount?: ((hash: string) => Effect.Effect<Option.Option<KeyWithAccount>, StoreError>) | undefined
  readonly deactivate: (id: ApiKeyId) => Effect.Effect<Option.Option<ApiKey>, StoreError>
}>()("genjobs/ApiKeyRepo") {}
