import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { adminClient, connection } from "./client.js"
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
    ["active", k.active ? "yes" : "no"]
  ])

const create = Command.make("create", {
  ...connection,
  accountId: Args.text({ name: "account-id" }),
  name: Options.text("name").pipe(Options.withDescription("To tell keys apart")),
  scopes: Options.choice("scope", ["submit_job", "check_status", "list_models"]).pipe(
    Options.repeated,
    Options.withDescription("A scope (repeat for more; none means all)")
  ),
  allowedIPs: Options.text("allow-ip").pipe(Options.repeated, Options.withDescription("An address or CIDR range (repeat for more; none means any)")),
  expiresAt: Options.text("expires-at").pipe(Options.withDescription("ISO 8601 time the key stops working"), Options.optional)
}, (o) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const key = yield* client.call("POST", `/admin/accounts/${encodeURIComponent(o.accountId)}/keys`, {
      name: o.name,
      scopes: o.scopes,
      allowedIPs: o.allowedIPs,
      expiresAt: Option.getOrNull(o.expiresAt)
    })
    yield* emit(o.json, key, () => `${keyFields(key)}\n\nThe key (shown only this once; keep it):\n\n    ${key.key}\n`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(Command.withDescription("Create an API key; its secret is printed once"))

const deactivate = Command.make("deactivate", { ...connection, id: Args.text({ name: "key-id" }) }, (o) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const key = yield* client.call("POST", `/admin/keys/${encodeURIComponent(o.id)}/deactivate`)
    yield* emit(o.json, key, () => `Deactivated key ${key.id} (${key.hint}) of account ${key.accountId}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(Command.withDescription("Deactivate an API key: it is refused from now on"))

export const keys = Command.make("keys").pipe(
  Command.withDescription("Create and deactivate API keys"),
  Command.withSubcommands([create, deactivate])
)
