/**
 * The engine's store work for one submit on the framework and client the engine is built on, with
 * nothing of the engine: submitApi.ts's HttpApi (the engine's payload Schema, the key's header, an
 * encoded 201 answer; span and access log off) whose handler does what bareServers/pgSameWork.ts
 * does by hand: the API key looked up once and then cached (as the engine's key cache does), and
 * the engine's own single-submit statement per request (lib/submitText.ts, without its NOTIFY, as
 * pgSameWork.ts sends it), through the engine's
 * PostgreSQL client (adapters/sql/pgPool.ts: @effect/sql-pg, its pool, prepared statements). No
 * batching across requests, no idempotency, no admission beyond the charge's own conditions.
 *
 * On the engine's database as pgSameWork.ts (http_submit starts both on it once the engine is
 * stopped; COST_MICRO_CENTS, MODEL_VERSION, ESTIMATED_MS). Beside pgSameWork.ts it tells what the
 * framework and client add to the submit's work; beside the engine, what the engine's own code
 * adds: the floor of any engine doing this work on this framework, one statement a request.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Schema } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { HttpMiddleware, HttpRouter } from "effect/http"
import { SqlClient } from "effect/sql"
import { hash, randomBytes } from "node:crypto"
import { createServer } from "node:http"
import { layerPgClientWithPoolUse } from "../../adapters/sql/pgPool.js"
import { KEY_BY_HASH_TEXT, SUBMIT_TEXT_WITHOUT_NOTIFY, submitValues } from "../lib/submitText.js"
import { submitApi } from "./submitApi.js"

const cost = Number(process.env.COST_MICRO_CENTS)
const version = process.env.MODEL_VERSION!
const estimatedMs = Number(process.env.ESTIMATED_MS)

const Api = submitApi(Schema.Struct({
  jobId: Schema.String,
  requestId: Schema.String,
  status: Schema.String,
  estimatedCompletionTime: Schema.String,
  costMicroCents: Schema.Number
}))

interface Key {
  readonly id: string
  readonly accountId: string
}

const newId = (prefix: string) => `${prefix}_${randomBytes(15).toString("base64url")}`

const Jobs = HttpApiBuilder.group(Api, "jobs", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const keys = new Map<string, Key>()
    const keyOf = (authorization: string): Effect.Effect<Key | undefined, unknown> => {
      const known = keys.get(authorization)
      if (known !== undefined) return Effect.succeed(known)
      const secret = authorization.replace(/^Bearer\s+/i, "")
      return Effect.map(sql.unsafe<{ id: string; account_id: string }>(KEY_BY_HASH_TEXT, [hash("sha256", secret, "hex")]), (rows) => {
        const found = rows[0] === undefined ? undefined : { id: rows[0].id, accountId: rows[0].account_id }
        if (found !== undefined) keys.set(authorization, found)
        return found
      })
    }
    let requests = 0
    return handlers.handle("submit", ({ headers, payload }) =>
      Effect.gen(function*() {
        const key = yield* keyOf(headers.authorization ?? "")
        // Any refusal answers 500: the bench fails a figure on any answer but a 2xx.
        if (key === undefined) return yield* Effect.die(new Error("unknown key"))
        const now = Date.now()
        const jobId = newId("job")
        const requestId = `req_${++requests}`
        const rows = yield* sql.unsafe(SUBMIT_TEXT_WITHOUT_NOTIFY, submitValues({
          accountId: key.accountId, keyId: key.id, model: payload.model, version, costMicroCents: cost, estimatedMs,
          jobId, requestId, ledgerId: newId("led"), input: JSON.stringify(payload.input), now
        }, false) as Array<never>)
        if (rows.length === 0) return yield* Effect.die(new Error("refused"))
        return { jobId, requestId, status: "pending", estimatedCompletionTime: new Date(now + estimatedMs).toISOString(), costMicroCents: cost }
      }).pipe(Effect.orDie))
  }))

const server = HttpRouter.serve(HttpApiBuilder.layer(Api).pipe(Layer.provide(Jobs)), { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)),
  Layer.provide(layerPgClientWithPoolUse({ url: process.env.DATABASE_URL! })),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" }))
)

NodeRuntime.runMain(Layer.launch(server))
