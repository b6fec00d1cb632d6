import { Context, Layer } from "effect"
import type { Backoff } from "../domain/backoff.js"
import { DEFAULT_CHANGES_RETENTION_MS } from "../domain/change.js"
import type { CircuitSettings } from "../domain/circuit.js"
import { DEFAULT_OUTPUT_SIZE_CAPS, type OutputSizeCaps } from "../domain/outputFiles.js"
import { RETRY_DELAYS_MS } from "../domain/webhookSchedule.js"

/** Settings the engine's services read. The bundled app fills it from the environment. */
export interface EngineSettings {
  /** Micro-cents one catalog credit is worth. */
  readonly creditMicroCents: number
  /** How long a worker's claim on a job lasts before another worker may take it over. */
  readonly leaseMs: number
  /** Claims of one job before it is failed with a refund (a worker dying each time). */
  readonly maxAttempts: number
  /** Idle workers look for jobs at least this often, signal or not. */
  readonly pollIntervalMs: number
  /**
   * How often the reaper pass fails jobs whose last attempt's lease expired. One process runs
   * it at a time; another takes it over within two intervals of that process stopping.
   */
  readonly reapIntervalMs: number
  /**
   * With a queue broker: a job still pending this long after its submit, or whose lease ended
   * this long ago, is published again by the queue relay, in case the broker lost it (a restart
   * without persistence, a publish cut off by a crash); again only once the longer of this and
   * the broker's hold on a delivery (1.5 leases) has passed since the relay's last publish of it.
   * Every `queueRelayIntervalMs`; one process at a time.
   */
  readonly queueRelayGraceMs: number
  /**
   * With a queue broker: how often the queue relay's pass runs. One process runs it at a time;
   * another takes it over within two intervals of that process stopping.
   */
  readonly queueRelayIntervalMs: number
  /** How long a graceful shutdown waits for running jobs. */
  readonly drainTimeoutMs: number
  /** How long an Idempotency-Key is remembered. */
  readonly idempotencyWindowMs: number
  /** One webhook attempt's whole time (DNS to the last byte of the answer); spec 6.1: 30 s. */
  readonly webhookDeadlineMs: number
  /** Delays before each webhook retry; spec 6.1: 1, 4, 16, 64, 256 s (six attempts in all). */
  readonly webhookRetryDelaysMs: ReadonlyArray<number>
  /** Webhook attempts of one account in flight at once, across all processes. */
  readonly webhookDeliveriesPerAccount: number
  /**
   * How long completed, failed and cancelled jobs are kept after they ended, with their sent or
   * failed webhook deliveries and their output files; null (the default) keeps them forever.
   * Never less than `idempotencyWindowMs`, so a retried submit still finds its job.
   */
  readonly jobRetentionMs: number | null
  /**
   * How long the changes feed (GET /v1/changes) keeps each job's ending; 7 days by default. The
   * retention sweeper deletes older entries, whatever `jobRetentionMs` says.
   */
  readonly changesRetentionMs: number
  /**
   * How often the retention sweeper removes what is past retention, and idempotency records
   * past their window. One process runs a pass at a time; another takes over within two intervals.
   */
  readonly retentionSweepIntervalMs: number
  /** Jobs, or idempotency records, one retention batch removes in one transaction. */
  readonly retentionBatchSize: number
  /**
   * The URL the engine answers at, base path included. With it, providers that call back are
   * given `${publicUrl}/v1/providers/{providerId}/callbacks/{jobId}`; without it they are polled only.
   */
  readonly publicUrl: string | undefined
  /** Between polls of a running generation, when the provider gives no hint of its own. */
  readonly providerPollIntervalMs: number
  /**
   * A provider's transient errors (429, 5xx, no answer) are retried after capped exponential
   * backoff with full jitter, never sooner than its Retry-After, at most `maxRetries` times in a row.
   */
  readonly providerRetry: Backoff & { readonly maxRetries: number }
  /**
   * A provider credential's circuit: `failures` failed calls in a row (no answer, 429, 5xx) open
   * it, so new starts skip it (another credential, else the next route); after `pauseMs` one
   * probe goes through, and its success closes it.
   */
  readonly providerCircuit: CircuitSettings
  /**
   * A job's store steps that hit a store fault (its catalog read, provider-state and output
   * writes, its end) are retried this way while its lease may still be held; failed claims wait it too.
   */
  readonly storeRetry: Backoff
  /** The largest output file the engine stores, per output type, in bytes: a larger one fails the job. */
  readonly outputSizeCaps: OutputSizeCaps
  /**
   * Lets output downloads reach private, loopback and other non-public addresses (a simulator,
   * a provider on a private network). Off: an output URL whose address, once resolved, or whose
   * redirect is not public fails the job before anything is fetched.
   */
  readonly providerOutputAllowPrivate: boolean
  /**
   * Open status streams (SSE) and waiting long-polls (`Prefer: wait`) one process holds at once;
   * one more is answered 503 with Retry-After (docs/decisions.md, "Watchers").
   */
  readonly maxWatchers: number
}

export const defaultEngineSettings: EngineSettings = {
  creditMicroCents: 10_000,
  leaseMs: 60_000,
  maxAttempts: 3,
  pollIntervalMs: 1_000,
  reapIntervalMs: 5_000,
  queueRelayGraceMs: 60_000,
  queueRelayIntervalMs: 5_000,
  drainTimeoutMs: 30_000,
  idempotencyWindowMs: 24 * 60 * 60 * 1000,
  webhookDeadlineMs: 30_000,
  webhookRetryDelaysMs: RETRY_DELAYS_MS,
  webhookDeliveriesPerAccount: 4,
  jobRetentionMs: null,
  changesRetentionMs: DEFAULT_CHANGES_RETENTION_MS,
  retentionSweepIntervalMs: 60_000,
  retentionBatchSize: 100,
  publicUrl: undefined,
  providerPollIntervalMs: 5_000,
  providerRetry: { baseMs: 1_000, capMs: 60_000, maxRetries: 10 },
  providerCircuit: { failures: 5, pauseMs: 30_000 },
  storeRetry: { baseMs: 100, capMs: 5_000 },
  outputSizeCaps: DEFAULT_OUTPUT_SIZE_CAPS,
  providerOutputAllowPrivate: false,
  maxWatchers: 20_000
}

export class EngineConfig extends Context.Service<EngineConfig, EngineSettings>()("genjobs/EngineConfig") {
  static readonly layer = (overrides: Partial<EngineSettings> = {}) =>
    Layer.succeed(EngineConfig, { ...defaultEngineSettings, ...overrides })
}
