import { Context, type Effect, type Option } from "effect"
import type { ApiKey } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import type { ApiKeyId } from "../domain/ids.js"

export class ApiKeyRepo extends Context.Tag("genjobs/ApiKeyRepo")<ApiKeyRepo, {
  readonly create: (key: ApiKey) => Effect.Effect<void, StoreError>
  readonly findByHash: (hash: string) => Effect.Effect<Option.Option<ApiKey>, StoreError>
  readonly deactivate: (id: ApiKeyId) => Effect.Effect<Option.Option<ApiKey>, StoreError>
}>() {}
