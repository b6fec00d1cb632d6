/**
 * The framework and store client the engine is built on, with one INSERT behind a submit and
 * nothing else of the engine: bareServers/httpApiSubmit.ts's HttpApi (POST /v1/jobs/submit,
 * Schema-decoded payload, encoded answer, span and access log off) whose handler writes the row
 * bareServers/pg.ts writes, through the engine's own PostgreSQL client (adapters/sql/pgPool.ts:
 * @effect/sql-pg, prepared statements, pool of 10 as pg's). What it costs per request is the floor
 * under the engine's submit on PostgreSQL: the ratio no engine on this framework and client can pass.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Schema } from "effect"
import { HttpMiddleware, HttpRouter } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { layerPgClientWithPoolUse } from "../../adapters/sql/pgPool.js"
import { submitApi } from "./submitApi.js"

const Api = submitApi(Schema.Struct({ jobId: Schema.String, status: Schema.String }))

const Jobs = HttpApiBuilder.group(Api, "jobs", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return handlers.handle("submit", ({ headers, payload }) => {
      const id = `job_${randomUUID()}`
      return sql`INSERT INTO bare_jobs (id, api_key, model, input, status, created_at)
        VALUES (${id}, ${headers.authorization ?? ""}, ${payload.model}, ${JSON.stringify(payload.input)}, 'pending', ${Date.now()})`.pipe(
        Effect.as({ jobId: id, status: "pending" }),
        Effect.orDie
      )
    })
  }))

const Sql = layerPgClientWithPoolUse({ url: process.env.DATABASE_URL! })

// The table before the port: a request accepted before the router is installed is never answered.
const Table = Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`CREATE TABLE IF NOT EXISTS bare_jobs (
    id TEXT PRIMARY KEY, api_key TEXT NOT NULL, model TEXT NOT NULL, input TEXT NOT NULL, status TEXT NOT NULL, created_at BIGINT NOT NULL
  )`)).pipe(Layer.provide(Sql))

const server = HttpRouter.serve(HttpApiBuilder.layer(Api).pipe(Layer.provide(Jobs)), { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)),
  Layer.provide(Sql),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" }).pipe(Layer.provide(Table)))
)

NodeRuntime.runMain(Layer.launch(server))
