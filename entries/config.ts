import { Config, Effect, Layer, Option, Redacted, Result, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { DEFAULT_WEBHOOK_DISPATCHERS, type FilePorts, type StorePorts } from "../src/engine.js"
import type { JobQueue } from "../src/ports/JobQueue.js"
import { parseAdminTokens } from "../src/http/adminTokens.js"
import { DEFAULT_BODY_TIMEOUT_MS, DEFAULT_MAX_JSON_BODY_BYTES, DEFAULT_STORE_WAIT_MS, DEFAULT_UPLOAD_IDLE_TIMEOUT_MS } from "../src/http/HttpConfig.js"
import { FILES_PATH } from "../src/http/systemRoutes.js"
import { defaultEngineSettings } from "../src/services/EngineConfig.js"
import { localFiles } from "../adapters/blob/localFiles.js"
import { layerEngine, type EngineOptions } from "./engine.js"
import { loadOptionalEntry } from "./optionalEntry.js"
import { invalidSetting, satisfying } from "./settingChecks.js"

const nonNegative = (name: string, fallback: number) =>
  Config.Int(name).pipe(
    Config.withDefault(fallback),
    satisfying(`${name} must be a whole number of 0 or more`, (n) => n >= 0)
  )

/** A layer that fails to build with `error`: a setting the environment got wrong, reported at start-up. */
const refused = <A>(error: Error): Layer.Layer<A, Error> => Layer.unwrap<A, never, never, Error, never>(Effect.fail(error))

const DAY_MS = 24 * 60 * 60 * 1000

/** Every engine setting the environment can give; the bundled server reads these and a few of its own. */
export const EngineEnv = Config.all({
  publicUrl: Config.option(Config.String("PUBLIC_URL")),
  providerCallbackUrl: Config.option(Config.String("PROVIDER_CALLBACK_URL")),
  dataDir: Config.String("DATA_DIR").pipe(Config.withDefault("./data")),
  databaseUrl: Config.option(Config.Redacted("DATABASE_URL")),
  tablePrefix: Config.option(Config.String("TABLE_PREFIX")),
  queueUrl: Config.option(Config.Redacted("QUEUE_URL")),
  queueRelayGraceMs: nonNegative("QUEUE_RELAY_GRACE_MS", defaultEngineSettings.queueRelayGraceMs).pipe(
    satisfying("QUEUE_RELAY_GRACE_MS must be at least 1000", (n) => n >= 1000)
  ),
  queueRelayIntervalMs: nonNegative("QUEUE_RELAY_INTERVAL_MS", defaultEngineSettings.queueRelayIntervalMs).pipe(
    satisfying("QUEUE_RELAY_INTERVAL_MS must be at least 100", (n) => n >= 100)
  ),
  databasePreparedStatements: Config.Boolean("DATABASE_PREPARED_STATEMENTS").pipe(Config.withDefault(true)),
  // Kept in step with DEFAULT_STORE_TIMEOUT_MS (adapters/sql/pgPool.ts), which entries/ cannot import for the optional pg package.
  storeTimeoutMs: nonNegative("STORE_TIMEOUT_MS", 5_000).pipe(
    satisfying("STORE_TIMEOUT_MS must be at least 100", (n) => n >= 100)
  ),
  // 0 turns shedding off.
  storeWaitMs: nonNegative("STORE_WAIT_MS", DEFAULT_STORE_WAIT_MS),
  databasePoolSize: Config.option(Config.Int("DATABASE_POOL_SIZE").pipe(
    satisfying("DATABASE_POOL_SIZE must be a whole number of 1 or more", (n) => n >= 1)
  )),
  adminToken: Config.option(Config.Redacted("ADMIN_TOKEN")),
  adminTokens: Config.option(Config.Redacted("ADMIN_TOKENS").pipe(
    Config.mapEffect((text) =>
      Result.match(parseAdminTokens(Redacted.value(text)), {
        onFailure: (message) => Effect.fail(invalidSetting(message)),
        onSuccess: (tokens) => Effect.succeed(tokens.map(({ name, token }) => ({ name, token: Redacted.make(token) })))
      })
    )
  )),
  dashboard: Config.Boolean("DASHBOARD").pipe(Config.withDefault(true)),
  metricsToken: Config.option(Config.Redacted("METRICS_TOKEN")),
  workerConcurrency: nonNegative("WORKER_CONCURRENCY", 2),
  creditMicroCents: Config.Int("CREDIT_MICRO_CENTS").pipe(
    Config.withDefault(10_000),
    satisfying("CREDIT_MICRO_CENTS must be a positive whole number", (n) => n > 0)
  ),
  webhookAllowPrivate: Config.Boolean("WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
  providerOutputAllowPrivate: Config.Boolean("PROVIDER_OUTPUT_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
  providerCircuitFailures: nonNegative("PROVIDER_CIRCUIT_FAILURES", defaultEngineSettings.providerCircuit.failures).pipe(
    satisfying("PROVIDER_CIRCUIT_FAILURES must be at least 1", (n) => n >= 1)
  ),
  providerCircuitPauseMs: nonNegative("PROVIDER_CIRCUIT_PAUSE_MS", defaultEngineSettings.providerCircuit.pauseMs),
  webhookDispatchers: nonNegative("WEBHOOK_DISPATCHERS", DEFAULT_WEBHOOK_DISPATCHERS),
  webhookDeliveriesPerAccount: nonNegative("WEBHOOK_DELIVERIES_PER_ACCOUNT", defaultEngineSettings.webhookDeliveriesPerAccount).pipe(
    satisfying("WEBHOOK_DELIVERIES_PER_ACCOUNT must be at least 1", (n) => n >= 1)
  ),
  // The spec's deadline and schedule (6.1) by default; tests shorten them to run six attempts in seconds.
  webhookDeadlineMs: nonNegative("WEBHOOK_DEADLINE_MS", defaultEngineSettings.webhookDeadlineMs).pipe(
    satisfying("WEBHOOK_DEADLINE_MS must be at least 1", (n) => n >= 1)
  ),
  webhookRetryDelaysMs: Config.Array(Schema.Int, "WEBHOOK_RETRY_DELAYS_MS").pipe(
    Config.withDefault(defaultEngineSettings.webhookRetryDelaysMs),
    satisfying("WEBHOOK_RETRY_DELAYS_MS must be comma-separated whole numbers of 0 or more", (delays) => delays.every((n) => n >= 0))
  ),
  uploadSweeper: Config.Boolean("UPLOAD_SWEEPER").pipe(Config.withDefault(true)),
  retentionSweeper: Config.Boolean("RETENTION_SWEEPER").pipe(Config.withDefault(true)),
  jobRetentionDays: Config.option(Config.Int("JOB_RETENTION_DAYS").pipe(
    satisfying("JOB_RETENTION_DAYS must be a whole number of days, 1 or more", (n) => n >= 1)
  )),
  changesRetentionDays: Config.Int("CHANGES_RETENTION_DAYS").pipe(
    Config.withDefault(defaultEngineSettings.changesRetentionMs / DAY_MS),
    satisfying("CHANGES_RETENTION_DAYS must be a whole number of days, 1 or more", (n) => n >= 1)
  ),
  retentionSweepIntervalMs: nonNegative("RETENTION_SWEEP_INTERVAL_MS", defaultEngineSettings.retentionSweepIntervalMs).pipe(
    satisfying("RETENTION_SWEEP_INTERVAL_MS must be at least 1000", (n) => n >= 1000)
  ),
  retentionBatchSize: nonNegative("RETENTION_BATCH_SIZE", defaultEngineSettings.retentionBatchSize).pipe(
    satisfying("RETENTION_BATCH_SIZE must be from 1 to 10000", (n) => n >= 1 && n <= 10_000)
  ),
  maxWatchers: nonNegative("MAX_WATCHERS", defaultEngineSettings.maxWatchers).pipe(
    satisfying("MAX_WATCHERS must be at least 1", (n) => n >= 1)
  ),
  trustedProxyHops: nonNegative("TRUSTED_PROXY_HOPS", 0),
  maxJsonBodyBytes: nonNegative("MAX_JSON_BODY_BYTES", DEFAULT_MAX_JSON_BODY_BYTES).pipe(
    satisfying("MAX_JSON_BODY_BYTES must be at least 1", (n) => n >= 1)
  ),
  bodyTimeoutMs: nonNegative("BODY_TIMEOUT_MS", DEFAULT_BODY_TIMEOUT_MS).pipe(
    satisfying("BODY_TIMEOUT_MS must be at least 100", (n) => n >= 100)
  ),
  uploadIdleTimeoutMs: nonNegative("UPLOAD_IDLE_TIMEOUT_MS", DEFAULT_UPLOAD_IDLE_TIMEOUT_MS).pipe(
    satisfying("UPLOAD_IDLE_TIMEOUT_MS must be at least 100", (n) => n >= 100)
  ),
  leaseMs: nonNegative("JOB_LEASE_MS", 60_000).pipe(
    satisfying("JOB_LEASE_MS must be at least 1000", (n) => n >= 1000)
  ),
  maxAttempts: nonNegative("JOB_MAX_ATTEMPTS", 3).pipe(
    satisfying("JOB_MAX_ATTEMPTS must be at least 1", (n) => n >= 1)
  ),
  uploadSecret: Config.option(Config.Redacted("UPLOAD_SECRET")),
  blobDriver: Config.Literals(["fs", "s3"], "BLOB_DRIVER").pipe(Config.withDefault("fs" as const)),
  blobDir: Config.option(Config.String("BLOB_DIR")),
  s3: Config.all({
    endpoint: Config.option(Config.String("S3_ENDPOINT")),
    bucket: Config.option(Config.String("S3_BUCKET")),
    region: Config.String("S3_REGION").pipe(Config.withDefault("us-east-1")),
    accessKeyId: Config.option(Config.String("S3_ACCESS_KEY_ID")),
    secretAccessKey: Config.option(Config.Redacted("S3_SECRET_ACCESS_KEY")),
    publicUrl: Config.option(Config.String("S3_PUBLIC_URL")),
    forcePathStyle: Config.Boolean("S3_FORCE_PATH_STYLE").pipe(Config.withDefault(false))
  })
})

export type EngineEnvSettings = Config.Success<typeof EngineEnv>

/** What the environment cannot give: code (providers) and the URL the host serves the engine at. */
export interface EngineEnvDefaults extends Pick<EngineOptions, "providers"> {
  /** Used when PUBLIC_URL is unset: the URL your server answers at, with the engine's base path. */
  readonly publicUrl: string
}

export const isPostgresUrl = (url: Redacted.Redacted<string>): boolean => /^postgres(ql)?:\/\//.test(Redacted.value(url))

/**
 * UPLOAD_SECRET, or one made once and kept in DATA_DIR, so restarts keep issued upload URLs
 * valid. Processes sharing a database must share UPLOAD_SECRET.
 */
const uploadSecretOf = (settings: EngineEnvSettings): string =>
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

const tablePrefixOf = (settings: EngineEnvSettings) =>
  Option.match(settings.tablePrefix, { onNone: () => ({}), onSome: (tablePrefix) => ({ tablePrefix }) })

/**
 * SQLite in DATA_DIR unless DATABASE_URL names a PostgreSQL server. The drivers are optional
 * packages, loaded only when chosen.
 */
const storeOf = (settings: EngineEnvSettings): Layer.Layer<StorePorts, unknown> =>
  Option.match(settings.databaseUrl, {
    onNone: () =>
      Layer.unwrap(
        loadOptionalEntry<typeof import("./sqlite.js")>("genjobs/sqlite", "DATABASE_URL is unset, so the store is SQLite").pipe(
          Effect.map(({ sqliteStore }) => sqliteStore({ filename: join(settings.dataDir, "genjobs.db"), ...tablePrefixOf(settings) }))
        )
      ),
    onSome: (url) =>
      isPostgresUrl(url)
        ? Layer.unwrap(
          loadOptionalEntry<typeof import("./postgres.js")>("genjobs/postgres", "DATABASE_URL names PostgreSQL").pipe(
            Effect.map(({ postgresStore }) =>
              postgresStore({
                url,
                preparedStatements: settings.databasePreparedStatements,
                maxConnections: Option.getOrUndefined(settings.databasePoolSize),
                storeTimeoutMs: settings.storeTimeoutMs,
                ...tablePrefixOf(settings)
              })
            )
          )
        )
        : refused(new Error("DATABASE_URL must be a postgres:// URL; leave it unset for the embedded SQLite store"))
  })

/**
 * The store's own queue unless QUEUE_URL names a broker: `redis://` (or `rediss://`) for Redis
 * Streams, `nats://` for NATS JetStream. The clients are optional packages, loaded only when chosen.
 */
const queueOf = (settings: EngineEnvSettings): Layer.Layer<JobQueue, unknown> | undefined =>
  Option.match(settings.queueUrl, {
    onNone: () => undefined,
    onSome: (url) => {
      const scheme = /^([a-z]+):\/\//.exec(Redacted.value(url))?.[1]
      if (scheme === "redis" || scheme === "rediss") {
        return Layer.unwrap(
          loadOptionalEntry<typeof import("./redis.js")>("genjobs/redis", "QUEUE_URL names Redis").pipe(
            Effect.map(({ layerRedisJobQueue }) => layerRedisJobQueue({ url, ...tablePrefixOf(settings) }))
          )
        )
      }
      if (scheme === "nats") {
        return Layer.unwrap(
          loadOptionalEntry<typeof import("./nats.js")>("genjobs/nats", "QUEUE_URL names NATS").pipe(
            Effect.map(({ layerNatsJobQueue }) => layerNatsJobQueue({ url, ...tablePrefixOf(settings) }))
          )
        )
      }
      return refused(new Error("QUEUE_URL must be a redis://, rediss:// or nats:// URL; leave it unset for the store's own queue"))
    }
  })

/** Files on the local disk (served by the engine), or in an S3-compatible bucket (an optional package, loaded only when chosen). */
const filesOf = (settings: EngineEnvSettings, publicUrl: string): Layer.Layer<FilePorts, unknown> => {
  if (settings.blobDriver === "fs") {
    return Layer.suspend(() =>
      localFiles({
        dir: Option.getOrElse(settings.blobDir, () => join(settings.dataDir, "files")),
        publicUrl,
        uploadSecret: uploadSecretOf(settings)
      })
    )
  }
  const { s3 } = settings
  if (Option.isNone(s3.bucket)) return refused(new Error("BLOB_DRIVER=s3 needs S3_BUCKET"))
  const bucket = s3.bucket.value
  return Layer.unwrap(
    loadOptionalEntry<typeof import("./s3.js")>("genjobs/s3", "BLOB_DRIVER is s3").pipe(
      Effect.map(({ s3Files }) =>
        s3Files({
          bucket,
          region: s3.region,
          endpoint: Option.getOrUndefined(s3.endpoint),
          accessKeyId: Option.getOrUndefined(s3.accessKeyId),
          secretAccessKey: Option.getOrUndefined(s3.secretAccessKey),
          publicUrl: Option.getOrUndefined(s3.publicUrl),
          forcePathStyle: s3.forcePathStyle,
          uploadSecret: uploadSecretOf(settings)
        })
      )
    )
  )
}

/** Where uploaded files are served from: providers that read inputs accept only these URLs. */
export const inputUrlPrefixesOf = (settings: EngineEnvSettings, publicUrl: string): ReadonlyArray<string> => {
  if (settings.blobDriver === "fs") return [`${publicUrl}${FILES_PATH}/`]
  const base = Option.orElse(settings.s3.publicUrl, () => settings.s3.endpoint)
  return Option.match(base, { onNone: () => [], onSome: (url) => [`${url.replace(/\/$/, "")}/`] })
}

/** The engine's options from settings read from the environment. */
export const engineOptionsFromEnv = (settings: EngineEnvSettings, defaults: EngineEnvDefaults): EngineOptions => {
  const publicUrl = Option.getOrElse(settings.publicUrl, () => defaults.publicUrl).replace(/\/+$/, "")
  return {
    store: storeOf(settings),
    files: filesOf(settings, publicUrl),
    queue: queueOf(settings),
    providers: defaults.providers,
    settings: {
      // Providers that call back are given callback addresses under it, when one was given: the
      // default address (HOST:PORT, loopback by default) is one no remote provider can reach,
      // so without one they are polled.
      publicUrl: Option.getOrUndefined(Option.orElse(settings.providerCallbackUrl, () => settings.publicUrl))?.replace(/\/+$/, ""),
      creditMicroCents: settings.creditMicroCents,
      leaseMs: settings.leaseMs,
      maxAttempts: settings.maxAttempts,
      queueRelayGraceMs: settings.queueRelayGraceMs,
      queueRelayIntervalMs: settings.queueRelayIntervalMs,
      webhookDeliveriesPerAccount: settings.webhookDeliveriesPerAccount,
      jobRetentionMs: Option.match(settings.jobRetentionDays, { onNone: () => null, onSome: (days) => days * DAY_MS }),
      changesRetentionMs: settings.changesRetentionDays * DAY_MS,
      retentionSweepIntervalMs: settings.retentionSweepIntervalMs,
      retentionBatchSize: settings.retentionBatchSize,
      maxWatchers: settings.maxWatchers,
      webhookDeadlineMs: settings.webhookDeadlineMs,
      webhookRetryDelaysMs: settings.webhookRetryDelaysMs,
      providerOutputAllowPrivate: settings.providerOutputAllowPrivate,
      providerCircuit: { failures: settings.providerCircuitFailures, pauseMs: settings.providerCircuitPauseMs }
    },
    http: {
      adminToken: Option.getOrUndefined(settings.adminToken),
      adminTokens: Object.fromEntries(Option.getOrElse(settings.adminTokens, () => []).map(({ name, token }) => [name, token])),
      trustedProxyHops: settings.trustedProxyHops,
      maxJsonBodyBytes: settings.maxJsonBodyBytes,
      bodyTimeoutMs: settings.bodyTimeoutMs,
      uploadIdleTimeoutMs: settings.uploadIdleTimeoutMs,
      dashboard: settings.dashboard,
      storeWaitMs: settings.storeWaitMs
    },
    metrics: { token: Option.getOrUndefined(settings.metricsToken) },
    workers: settings.workerConcurrency,
    webhookDispatchers: settings.webhookDispatchers,
    webhookAllowPrivate: settings.webhookAllowPrivate,
    uploadSweeper: settings.uploadSweeper,
    retentionSweeper: settings.retentionSweeper
  }
}

/**
 * The whole engine with its settings read from the environment (the variables of
 * docs/configuration.md), as the bundled server does. Providers come from code.
 */
export const layerEngineConfig = (defaults: EngineEnvDefaults) =>
  Layer.unwrap(Effect.map(EngineEnv, (settings) => layerEngine(engineOptionsFromEnv(settings, defaults))))
