import * as Effect from "effect/Effect"
import { adminClient } from "./client.js"
import type { Input } from "./commandLine.js"
import { budgetText, readBudget } from "./budget.js"
import type { connection, keysCreate, keysUpdate } from "./commands.js"
import { emit, fields, list, report } from "./output.js"

const keyFields = (k: any) =>
  fields([
    ["id", k.id],
    ["account", k.accountId],
    ["name", k.name],
    ["hint", k.hint],
    ["scopes", k.scopes.length === 0 ? "all" : list(k.scopes)],
    ["allowed IPs", k.allowedIPs.length === 0 ? "any" : list(k.allowedIPs)],
    ["expires", k.expiresAt ?? "never"],
    ["budget", budgetText(k.budget)],
    ["active", k.active ? "yes" : "no"]
  ])

export const create = ({ args: [accountId], options: o }: Input<typeof keysCreate>) =>
  Effect.gen(function*() {
    const budget = yield* readBudget(o.budget)
    const client = yield* adminClient(o)
    const key = yield* client.call("POST", `/admin/accounts/${encodeURIComponent(accountId!)}/keys`, {
      name: o.name,
      scopes: o.scope,
      allowedIPs: o["allow-ip"],
      expiresAt: o["expires-at"] ?? null,
      ...(budget === undefined ? {} : { budget })
    })
    yield* emit(o.json, key, () => `${keyFields(key)}\n\nThe key (shown only this once; keep it):\n\n    ${key.key}\n`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))

export const deactivate = ({ args: [id], options: o }: Input<typeof connection>) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const key = yield* client.call("POST", `/admin/keys/${encodeURIComponent(id!)}/deactivate`)
    yield* emit(o.json, key, () => `Deactivated key ${key.id} (${key.hint}) of account ${key.accountId}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))

/** `genjobs keys update`: the budget is the only field a key takes after creation. */
export const update = ({ args: [id], options: o }: Input<typeof keysUpdate>) =>
  Effect.gen(function*() {
    const budget = yield* readBudget(o.budget)
    const client = yield* adminClient(o)
    const key = yield* client.call("PATCH", `/admin/keys/${encodeURIComponent(id!)}`, { budget })
    yield* emit(o.json, key, () => `Updated key ${key.id}\n${keyFields(key)}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))
