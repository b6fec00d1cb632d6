import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Accounts } from "../../services/Accounts.js"
import { EngineApi } from "../Api.js"
import { CurrentCaller } from "../middleware.js"
import { iso, spendView } from "../views.js"

export const AccountHandlers = HttpApiBuilder.group(EngineApi, "account", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    return handlers
      .handle("get", () =>
        Effect.gen(function*() {
          const { account, key } = yield* accounts.overview(yield* CurrentCaller)
          return { account, key: { ...key, expiresAt: key.expiresAt === null ? null : iso(key.expiresAt) } }
        }))
      .handle("spend", ({ query }) =>
        Effect.flatMap(CurrentCaller, (caller) => accounts.spend(caller, query)).pipe(Effect.map(spendView)))
  }))
