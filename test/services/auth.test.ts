import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Result } from "effect"
import { accountRepo, apiKeyRepo } from "../../adapters/memory/MemoryAccounts.js"
import { makeMemoryState } from "../../adapters/memory/state.js"
import { generateKeySecret, hashKeySecret, keyHint } from "../../src/domain/apiKeySecret.js"
import type { ApiKeyId } from "../../src/domain/ids.js"
import { isRefusal } from "../../src/domain/refusal.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import { Auth } from "../../src/services/Auth.js"
import { account, T0 } from "../conformance/fixtures.js"

describe("Auth over a key store without findWithAccount (it is optional)", () => {
  it.effect("reads the key, then its account, with the same answers", () =>
    Effect.gen(function*() {
      const state = yield* makeMemoryState
      const { findWithAccount: _, ...keysApart } = apiKeyRepo(state)
      const owner = yield* accountRepo(state).create(account(), 0)
      const secret = generateKeySecret()
      const key = {
        id: "key_apart" as ApiKeyId,
        accountId: owner.id,
        name: "k",
        scopes: [],
        allowedIPs: [],
        hash: hashKeySecret(secret),
        hint: keyHint(secret),
        active: true,
        expiresAt: null,
        createdAt: T0
      }
      yield* keysApart.create(key)
      const auth = yield* Effect.provide(
        Effect.service(Auth),
        Auth.layer.pipe(Layer.provide(Layer.mergeAll(Layer.succeed(ApiKeyRepo, keysApart), Layer.succeed(AccountRepo, accountRepo(state)))))
      )
      expect(yield* auth.authenticate({ authorization: `Bearer ${secret}` })).toEqual({ account: owner, key })
      yield* keysApart.deactivate(key.id)
      const refused = yield* Effect.result(auth.authenticate({ authorization: `Bearer ${secret}` }))
      expect(Result.isFailure(refused) && isRefusal(refused.failure) ? refused.failure.code : undefined).toBe("API_KEY_INACTIVE")
    }))
})
