import { Config, Option, Redacted } from "effect"

const nonNegative = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a whole number of 0 or more`, validation: (n) => n >= 0 })
  )

/** Every setting of the bundled server, read from the environment here and nowhere else. */
export const ServerConfig = Config.all({
  port: nonNegative("PORT", 3000).pipe(
    Config.validate({ message: "PORT must be at most 65535", validation: (n) => n <= 65535 })
  ),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  publicUrl: Config.option(Config.string("PUBLIC_URL")),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data")),
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")),
  adminToken: Config.option(Config.redacted("ADMIN_TOKEN")),
  workerConcurrency: nonNegative("WORKER_CONCURRENCY", 2),
  creditMicroCents: Config.integer("CREDIT_MICRO_CENTS").pipe(
    Config.withDefault(10_000),
    Config.validate({ message: "CREDIT_MICRO_CENTS must be a positive whole number", validation: (n) => n > 0 })
  ),
  webhookAllowPrivate: Config.boolean("WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
  webhookDispatchers: nonNegative("WEBHOOK_DISPATCHERS", 1),
  trustedProxyHops: nonNegative("TRUSTED_PROXY_HOPS", 0),
  leaseMs: nonNegative("JOB_LEASE_MS", 60_000).pipe(
    Config.validate({ message: "JOB_LEASE_MS must be at least 1000", validation: (n) => n >= 1000 })
  ),
  maxAttempts: nonNegative("JOB_MAX_ATTEMPTS", 3).pipe(
    Config.validate({ message: "JOB_MAX_ATTEMPTS must be at least 1", validation: (n) => n >= 1 })
  ),
  catalogFile: Config.option(Config.string("CATALOG_FILE")),
  uploadSecret: Config.option(Config.redacted("UPLOAD_SECRET")),
  blobDriver: Config.literal("fs", "s3")("BLOB_DRIVER").pipe(Config.withDefault("fs" as const)),
  blobDir: Config.option(Config.string("BLOB_DIR")),
  s3: Config.all({
    endpoint: Config.option(Config.string("S3_ENDPOINT")),
    bucket: Config.option(Config.string("S3_BUCKET")),
    region: Config.string("S3_REGION").pipe(Config.withDefault("us-east-1")),
    accessKeyId: Config.option(Config.string("S3_ACCESS_KEY_ID")),
    secretAccessKey: Config.option(Config.redacted("S3_SECRET_ACCESS_KEY")),
    publicUrl: Config.option(Config.string("S3_PUBLIC_URL")),
    forcePathStyle: Config.boolean("S3_FORCE_PATH_STYLE").pipe(Config.withDefault(false))
  })
})

export type ServerSettings = Config.Config.Success<typeof ServerConfig>

/** The URL clients reach the server at; file URLs are built on it. */
export const publicUrlOf = (settings: ServerSettings): string =>
  Option.getOrElse(settings.publicUrl, () => {
    const host = settings.host === "0.0.0.0" || settings.host === "::" ? "localhost" : settings.host
    return `http://${host.includes(":") ? `[${host}]` : host}:${settings.port}`
  }).replace(/\/$/, "")

export const isPostgresUrl = (url: Redacted.Redacted<string>): boolean =>
  /^postgres(ql)?:\/\//.test(Redacted.value(url))
