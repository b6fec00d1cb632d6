import { Statement } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeDemoProvider } from "../../adapters/generators/demo/DemoGenerator.js"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { HttpConfig } from "../../src/http/HttpConfig.js"
import { webHandlerInScope } from "../../src/http/webHandler.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { engineOver } from "../support/engineLayer.js"
import { freshPostgresUrl } from "../support/postgres.js"

const ADMIN_TOKEN = "statements-admin-token"

/** The demo catalog without rate limits, as the bench's: a submit with no idempotency key, rate limit or budget. */
const unlimitedCatalog = () => {
  const catalog = demoCatalog()
  for (const model of catalog.models) for (const version of model.versions) version.rateLimits = { requestsPerMinute: 0, requestsPerDay: 0 }
  return catalog
}

/** A statement's first words: enough to tell which it is. */
const head = (text: string) => text.replace(/\s+/g, " ").replace(/"genjobs_/g, "").replace(/"/g, "").split(" ").slice(0, 3).join(" ")

/**
 * The statements an accepted POST /v1/jobs/submit sends to the store once the process is warm
 * (its key, address and catalog read once before), caught as each statement runs: auth, the
 * guessing throttle and the catalog answer from their caches, and the submit itself is `expected`.
 */
const submitStatements = (stores: Layer.Layer<any, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    let counting = false
    const sent: Array<string> = []
    const fetch = yield* webHandlerInScope().pipe(
      Statement.withTransformer((statement) => {
        if (counting) sent.push(head(statement.compile()[0]))
        return Effect.succeed(statement)
      })
    )
    const call = async (path: string, body: unknown, token: string, method = "POST") => {
      const response = await fetch(
        new Request(`http://engine.test${path}`, {
          method,
          headers: { "content-type": "application/json", authorization: `Bearer ${token}`, "x-forwarded-for": "192.0.2.7" },
          body: JSON.stringify(body)
        })
      )
      return { status: response.status, body: await response.json() as any }
    }
    const run = <A>(f: () => Promise<A>) => Effect.promise(f)
    expect((yield* run(() => call("/admin/catalog", unlimitedCatalog(), ADMIN_TOKEN, "PUT"))).status).toBe(200)
    const account = yield* run(() => call("/admin/accounts", { name: "s", creditsMicroCents: 10_000_000 }, ADMIN_TOKEN))
    const key = yield* run(() => call(`/admin/accounts/${account.body.id}/keys`, { name: "k", scopes: [], allowedIPs: [] }, ADMIN_TOKEN))
    const submit = { model: demoCatalog().models[0]!.slug, input: { prompt: "count me" } }
    // Warm: the first submit reads the key, the address's failures and the catalog into their caches.
    expect((yield* run(() => call("/v1/jobs/submit", submit, key.body.key))).status).toBe(200)
    counting = true
    const accepted = yield* run(() => call("/v1/jobs/submit", submit, key.body.key))
    counting = false
    expect(accepted.status).toBe(200)
    return sent
  }).pipe(
    Effect.provide(Layer.merge(
      engineOver(stores as any, makeDemoProvider()),
      HttpConfig.layer({ adminToken: Redacted.make(ADMIN_TOKEN) })
    ))
  )))

describe("statements of one accepted submit", () => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-statements-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("SQLite: the charge, its ledger line and spend, and the job, in one transaction; nothing for the key, address or catalog", async () => {
    const sent = await submitStatements(layerSqlite({ filename: join(dir, "statements.db") }))
    expect(sent).toEqual(["UPDATE accounts SET", "INSERT INTO ledger", "INSERT INTO spend_hourly", "INSERT INTO jobs"])
  })

  it("PostgreSQL: one statement, charge and job together; nothing for the key, address or catalog", async () => {
    const url = await freshPostgresUrl()
    if (url === undefined) return
    const sent = await submitStatements(layerPostgres({ url: Redacted.make(url) }))
    expect(sent).toEqual(["WITH ended AS"])
  })
})
