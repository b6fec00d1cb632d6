import { S3Client } from "@aws-sdk/client-s3"
import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { join } from "node:path"
import { layerFsBlobStore } from "../../adapters/blob/FsBlobStore.js"
import { layerS3BlobStore } from "../../adapters/blob/S3BlobStore.js"
import { layerS3UploadTarget } from "../../adapters/blob/S3UploadTarget.js"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { DEMO_PROVIDER_ID, makeDemoGenerator } from "../../adapters/generators/demo/DemoGenerator.js"
import { layerLocalJobSignal } from "../../adapters/memory/LocalJobSignal.js"
import { layerPostgres, layerSqlite } from "../../adapters/sql/layer.js"
import { layerPgJobSignal } from "../../adapters/sql/PgJobSignal.js"
import { layerNodeWebhookSender } from "../../adapters/webhooks/NodeWebhookSender.js"
import { EngineServicesLive } from "../../src/engine.js"
import { HttpConfig } from "../../src/http/HttpConfig.js"
import { EngineHttpLive } from "../../src/http/layer.js"
import { FILES_PATH } from "../../src/http/systemRoutes.js"
import { layerGenerators } from "../../src/ports/Generator.js"
import { EngineConfig } from "../../src/services/EngineConfig.js"
import { WebhookDispatcher } from "../../src/services/WebhookDispatcher.js"
import { UploadSigningSecret } from "../../src/services/Uploads.js"
import { UploadSweeper } from "../../src/services/UploadSweeper.js"
import { Worker } from "../../src/services/Worker.js"
import { isPostgresUrl, publicUrlOf, ServerConfig, type ServerSettings } from "./config.js"
import { importCatalogFile, seedIfEmpty } from "./seed.js"

/** SQLite in DATA_DIR unless DATABASE_URL names a PostgreSQL server. */
const storesFor = (settings: ServerSettings) =>
  Option.match(settings.databaseUrl, {
    onNone: () =>
      Layer.mergeAll(layerSqlite({ filename: join(settings.dataDir, "genjobs.db") }), layerLocalJobSignal),
    onSome: (url) => {
      if (!isPostgresUrl(url)) {
        return Layer.fail(new Error("DATABASE_URL must be a postgres:// URL; leave it unset for the embedded SQLite store"))
      }
      return Layer.mergeAll(layerPostgres({ url }), layerPgJobSignal({ url }))
    }
  })

/**
 * The upload URL signing secret: UPLOAD_SECRET, or one made once and kept in DATA_DIR, so
 * restarts keep issued URLs valid. Processes sharing a database must share UPLOAD_SECRET.
 */
const uploadSecretOf = (settings: ServerSettings): string =>
  Option.match(settings.uploadSecret, {
    onSome: Redacted.value,
    onNone: () => {
      const file = join(settings.dataDir, "upload-secret")
      if (!existsSync(file)) {
        mkdirSync(settings.dataDir, { recursive: true })
        writeFileSync(file, randomBytes(32).toString("hex"), { mode: 0o600 })
      }
      return readFileSync(file, "utf8").trim()
    }
  })

/** Files on the local disk (served by this server), or in an S3-compatible bucket. */
const blobsFor = (settings: ServerSettings, publicUrl: string) => {
  if (settings.blobDriver === "fs") {
    const dir = Option.getOrElse(settings.blobDir, () => join(settings.dataDir, "files"))
    return Layer.mergeAll(
      layerFsBlobStore({ dir, baseUrl: `${publicUrl}${FILES_PATH}` }),
      layerSignedUploadTarget({ publicUrl, secret: uploadSecretOf(settings) })
    )
  }
  const { s3 } = settings
  if (Option.isNone(s3.bucket)) return Layer.fail(new Error("BLOB_DRIVER=s3 needs S3_BUCKET"))
  const bucket = s3.bucket.value
  const client = new S3Client({
    region: s3.region,
    forcePathStyle: s3.forcePathStyle,
    // Presigned PUTs must not carry a checksum of an empty body, or S3 refuses every upload.
    requestChecksumCalculation: "WHEN_REQUIRED",
    ...Option.match(s3.endpoint, { onNone: () => ({}), onSome: (endpoint) => ({ endpoint }) }),
    ...(Option.isSome(s3.accessKeyId) && Option.isSome(s3.secretAccessKey)
      ? { credentials: { accessKeyId: s3.accessKeyId.value, secretAccessKey: Redacted.value(s3.secretAccessKey.value) } }
      : {})
  })
  const location = {
    client,
    bucket,
    publicBaseUrl: Option.getOrElse(s3.publicUrl, () =>
      Option.match(s3.endpoint, {
        onNone: () => `https://${bucket}.s3.${s3.region}.amazonaws.com`,
        onSome: (endpoint) => `${endpoint.replace(/\/$/, "")}/${bucket}`
      }))
  }
  return Layer.mergeAll(
    layerS3BlobStore(location),
    layerS3UploadTarget(location),
    Layer.succeed(UploadSigningSecret, uploadSecretOf(settings))
  )
}

/** Where uploaded files are served from: the demo provider reads inputs only there. */
const inputUrlPrefixesOf = (settings: ServerSettings, publicUrl: string): ReadonlyArray<string> =>
  settings.blobDriver === "fs"
    ? [`${publicUrl}${FILES_PATH}/`]
    : Option.match(settings.s3.publicUrl, {
      onSome: (url) => [`${url.replace(/\/$/, "")}/`],
      onNone: () => Option.match(settings.s3.endpoint, { onNone: () => [], onSome: (e) => [`${e.replace(/\/$/, "")}/`] })
    })

const appFor = (settings: ServerSettings) => {
  const publicUrl = publicUrlOf(settings)
  const services = EngineServicesLive.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        storesFor(settings),
        blobsFor(settings, publicUrl),
        layerGenerators({ [DEMO_PROVIDER_ID]: makeDemoGenerator({ inputUrlPrefixes: inputUrlPrefixesOf(settings, publicUrl) }) }),
        EngineConfig.layer({
          creditMicroCents: settings.creditMicroCents,
          leaseMs: settings.leaseMs,
          maxAttempts: settings.maxAttempts
        }),
        HttpConfig.layer({
          adminToken: Option.getOrUndefined(settings.adminToken),
          trustedProxyHops: settings.trustedProxyHops
        })
      )
    )
  )
  const prepare = Layer.effectDiscard(
    Effect.gen(function*() {
      if (settings.webhookAllowPrivate) {
        yield* Effect.logWarning("WEBHOOK_ALLOW_PRIVATE is set: webhooks may target private addresses. Development only.")
      }
      if (Option.isSome(settings.catalogFile)) yield* importCatalogFile(settings.catalogFile.value)
      yield* seedIfEmpty
      if (Option.isNone(settings.adminToken)) yield* Effect.logInfo("ADMIN_TOKEN is unset: the admin API is off")
    })
  )
  const workers = Layer.scopedDiscard(
    Effect.gen(function*() {
      yield* (yield* UploadSweeper).start
      if (settings.workerConcurrency === 0) return yield* Effect.logInfo("WORKER_CONCURRENCY=0: serving the API only")
      yield* (yield* Worker).start(settings.workerConcurrency)
      yield* Effect.logInfo(`${settings.workerConcurrency} in-process workers started`)
    })
  )
  const dispatchers = Layer.scopedDiscard(
    Effect.gen(function*() {
      if (settings.webhookDispatchers === 0) return
      yield* (yield* WebhookDispatcher).start(settings.webhookDispatchers)
    })
  ).pipe(
    Layer.provide(WebhookDispatcher.layer),
    Layer.provide(layerNodeWebhookSender({ allowPrivate: settings.webhookAllowPrivate }))
  )
  const server = HttpApiBuilder.serve().pipe(
    HttpServer.withLogAddress,
    Layer.provide(EngineHttpLive),
    Layer.provide(NodeHttpServer.layer(createServer, { port: settings.port, host: settings.host }))
  )
  return Layer.mergeAll(server, workers, dispatchers).pipe(Layer.provide(prepare), Layer.provide(services))
}

Effect.gen(function*() {
  const settings = yield* ServerConfig
  return yield* Layer.launch(appFor(settings))
}).pipe(NodeRuntime.runMain)
