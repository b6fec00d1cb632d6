/**
 * The engine of the fault suite's worker processes, composed from the public entries as an
 * application would: Replicate pointed at a simulator, local files, workers only (no webhook
 * dispatchers, no sweepers), on PostgreSQL or SQLite.
 */
import { Redacted } from "effect"
import { type Engine, localFiles, makeEngine } from "genjobs"
import { postgresStore } from "genjobs/postgres"
import { REPLICATE_PROVIDER_ID, replicateProvider } from "genjobs/providers/replicate"
import { sqliteStore } from "genjobs/sqlite"

export interface ReplicateEngineOptions {
  readonly store: { readonly postgres: string } | { readonly sqlite: string }
  readonly filesDir: string
  readonly replicateUrl: string
  readonly replicateToken: string
  readonly workers: number
  readonly leaseMs: number
  /** Between polls of a running prediction. */
  readonly pollIntervalMs: number
  /** Enables the admin API of `engine.fetch`. */
  readonly adminToken?: string | undefined
  /**
   * The engine's public URL: predictions then carry a webhook, and in it the job's marker that
   * `recover` looks for. Without it, a start whose answer was lost cannot be recovered.
   */
  readonly publicUrl?: string | undefined
}

/** The file's public URL base; outputs are stored under `filesDir` by key. */
export const FILES_PUBLIC_URL = "http://files.invalid"

export const startReplicateEngine = (options: ReplicateEngineOptions): Promise<Engine> =>
  makeEngine({
    store: "postgres" in options.store
      ? postgresStore({ url: Redacted.make(options.store.postgres) })
      : sqliteStore({ filename: options.store.sqlite }),
    files: localFiles({ dir: options.filesDir, publicUrl: FILES_PUBLIC_URL, uploadSecret: "fault-suite" }),
    providers: {
      [REPLICATE_PROVIDER_ID]: replicateProvider({
        apiToken: options.replicateToken,
        baseUrl: options.replicateUrl,
        pollIntervalMs: options.pollIntervalMs,
        requestTimeoutMs: 10_000
      })
    },
    workers: options.workers,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false,
    http: { adminToken: options.adminToken },
    // Retries short enough for a test: a 429's Retry-After still sets the least wait.
    settings: {
      leaseMs: options.leaseMs,
      pollIntervalMs: 200,
      providerRetry: { baseMs: 200, capMs: 2_000, maxRetries: 10 },
      publicUrl: options.publicUrl,
      // The simulator serves outputs from 127.0.0.1.
      providerOutputAllowPrivate: true
    }
  })

/** Reads a whole-number environment variable, or fails loudly. */
export const envInt = (name: string): number => {
  const value = Number(process.env[name])
  if (!Number.isInteger(value)) throw new Error(`${name} must be a whole number, got ${process.env[name]}`)
  return value
}

export const envString = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`${name} is not set`)
  return value
}
