import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { AccountRepo } from "../../src/ports/AccountRepo.js"
import type { ApiKeyRepo, KeyWithAccount } from "../../src/ports/ApiKeyRepo.js"
import { readActiveJobs } from "./activeJobs.js"
import { postLedger } from "./ledger.js"
import { AccountRow, ApiKeyRow, budgetColumns, DbInt, decodeRows, LedgerRow, storeErrors, toAccount, toApiKey, toLedgerEntry } from "./rows.js"
import { SqlTables } from "./tables.js"
import { fairWeightOf } from "../../src/domain/fairShare.js"

const decodeAccounts = decodeRows(Schema.Array(AccountRow))
const decodeKeys = decodeRows(Schema.Array(ApiKeyRow))
const decodeLedger = decodeRows(Schema.Array(LedgerRow))
const decodeCount = decodeRows(Schema.Array(Schema.Struct({ n: DbInt })))
const decodeKey = decodeRows(ApiKeyRow)
const decodeAccount = decodeRows(AccountRow)

const ACCOUNT_COLUMNS = Object.keys(AccountRow.fields)

/** A row of the key joined with its account: the account's columns prefixed `a_`, all null when it is gone. */
const decodeKeyWithAccount = (row: Record<string, unknown>) => {
  const account: Record<string, unknown> = {}
  for (const column of ACCOUNT_COLUMNS) account[column] = row[`a_${column}`]
  return Effect.zipWith(
    decodeKey(row),
    account["id"] === null ? Effect.succeed(Option.none()) : Effect.map(decodeAccount(account), (a) => Option.some(toAccount(a))),
    (key, found): KeyWithAccount => ({ key: toApiKey(key), account: found })
  )
}

export const makeSqlAccounts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables

  const find = (id: string) =>
    sql`SELECT * FROM ${t.accounts} WHERE id = ${id}`.pipe(
      Effect.flatMap(decodeAccounts),
      Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toAccount))
    )

  const accounts: AccountRepo["Service"] = {
    create: (account, initialCredit) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO ${t.accounts} ${
          sql.insert({
            id: account.id,
            name: account.name,
            balance_micro_cents: 0,
            max_concurrent_jobs: account.maxConcurrentJobs,
            segments: JSON.stringify(account.segments),
            allowed_models: JSON.stringify(account.allowedModels),
            discounts: JSON.stringify(account.discounts),
            webhook_secret: account.webhookSecret,
            previous_webhook_secret: account.previousWebhookSecret,
            previous_webhook_secret_expires_at: account.previousWebhookSecretExpiresAt,
            standard_webhooks: account.standardWebhooks ? 1 : 0,
            ...budgetColumns(account.budget),
            created_at: account.createdAt,
            fair_weight: fairWeightOf(account)
          })
        }`
        if (initialCredit > 0) {
          yield* postLedger(sql, t, { accountId: account.id, jobId: null, kind: "credit", amountMicroCents: initialCredit, now: account.createdAt })
        }
        return Option.getOrThrow(yield* find(account.id))
      })).pipe(storeErrors("create account")),
    get: (id) => find(id).pipe(storeErrors("read account")),
    addCredits: (id, amount, now) =>
      sql.withTransaction(Effect.gen(function*() {
        if (Option.isNone(yield* find(id))) return Option.none()
        yield* postLedger(sql, t, { accountId: id, jobId: null, kind: "credit", amountMicroCents: amount, now })
        return yield* find(id)
      })).pipe(storeErrors("add credits")),
    rotateWebhookSecret: (id, secret, previousExpiresAt) =>
      sql`UPDATE ${t.accounts} SET previous_webhook_secret = webhook_secret, webhook_secret = ${secret},
          previous_webhook_secret_expires_at = ${previousExpiresAt}
        WHERE id = ${id}`.pipe(Effect.andThen(find(id)), storeErrors("rotate webhook secret")),
    ledger: (id) =>
      sql`SELECT * FROM ${t.ledger} WHERE account_id = ${id} ORDER BY created_at, id`.pipe(
        Effect.flatMap(decodeLedger),
        Effect.map((rows) => rows.map(toLedgerEntry)),
        storeErrors("read ledger")
      ),
    count: sql`SELECT COUNT(*) AS n FROM ${t.accounts}`.pipe(
      Effect.flatMap(decodeCount),
      Effect.map((rows) => rows[0]?.n ?? 0),
      storeErrors("count accounts")
    ),
    activeJobs: (id) => readActiveJobs(sql, t, id)
  }

  const findKey = (column: "id" | "hash", value: string) =>
    (column === "id" ? sql`SELECT * FROM ${t.api_keys} WHERE id = ${value}` : sql`SELECT * FROM ${t.api_keys} WHERE hash = ${value}`).pipe(
      Effect.flatMap(decodeKeys),
      Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toApiKey))
    )

  /** The account's columns renamed apart from the key's (both tables have id, name and created_at). */
  const accountColumns = sql.literal(
    ACCOUNT_COLUMNS.map((column) => `a.${column} AS a_${column}`).join(", ")
  )

  const keys: ApiKeyRepo["Service"] = {
    create: (key) =>
      sql`INSERT INTO ${t.api_keys} ${
        sql.insert({
          id: key.id,
          account_id: key.accountId,
          name: key.name,
          scopes: JSON.stringify(key.scopes),
          allowed_ips: JSON.stringify(key.allowedIPs),
          hash: key.hash,
          hint: key.hint,
          active: key.active ? 1 : 0,
          expires_at: key.expiresAt,
          ...budgetColumns(key.budget),
          created_at: key.createdAt
        })
      }`.pipe(Effect.asVoid, storeErrors("create API key")),
    findByHash: (hash) => findKey("hash", hash).pipe(storeErrors("read API key")),
    findWithAccount: (hash) =>
      sql`SELECT k.*, ${accountColumns} FROM ${t.api_keys} k LEFT JOIN ${t.accounts} a ON a.id = k.account_id
        WHERE k.hash = ${hash}`.pipe(
        Effect.flatMap((rows) =>
          rows.length === 0 ? Effect.succeed(Option.none()) : Effect.map(decodeKeyWithAccount(rows[0]), Option.some)
        ),
        storeErrors("read API key")
      ),
    deactivate: (id) =>
      sql`UPDATE ${t.api_keys} SET active = 0 WHERE id = ${id}`.pipe(
        Effect.andThen(findKey("id", id)),
        storeErrors("deactivate API key")
      )
  }

  return { accounts, keys } as const
})
