import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import type { JobId } from "../../src/domain/ids.js"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import { makeBackgroundWriter, makeWriteBatcher } from "../../src/services/writeBatcher.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { QueueIsBroker } from "../../src/ports/JobQueue.js"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { WebhookSignal } from "../../src/ports/WebhookSignal.js"
import { makeLocalJobEvents } from "../memory/LocalJobEvents.js"
import { makeLocalSignal, makeWakeOne } from "../memory/LocalJobSignal.js"
import { DEFAULT_HINT_INTEREST, type HintInterestTimings, makeHintInterest } from "./pgHintInterest.js"
import { makePgListener, PgListener } from "./pgListener.js"
import { jobsChannel } from "./SqlJobs.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "./tables.js"

/** The job-events payload that hints every followed job (a job id never looks like it). */
const EVERY_JOB = "*"

/**
 * Wakes waiters in every process through LISTEN on `<prefix>jobs`, `<prefix>webhooks` and
 * `<prefix>job_events` (status-change hints whose payload is the job id, or `*` for every job), over
 * one connection of its own. Notifications are hints; waiters still poll. The channels carry
 * the stores' table prefix, so engines with different prefixes in one database do not wake
 * each other.
 *
 * Jobs: `notify`, called once a submit stored its job, sends NOTIFY after that commit, in a
 * statement of its own (wakeClaimers), so every process hears of the job once it is visible,
 * this one included (with a queue broker nothing is sent: no worker waits here). Each
 * notification wakes one local claimer. Webhooks: `notify` asks for a NOTIFY the same way; each
 * notification wakes every local dispatcher. Job events: `publish` sends NOTIFY after the
 * change committed; each notification hints the job's followers in this process. Claims' and
 * endings' hints (`publishIfFollowed`) are sent only while some process follows jobs, which
 * processes announce on `<prefix>job_follow` (pgHintInterest.ts).
 *
 * The process's shared LISTEN connection (PgListener, adapters/sql/pgListener.ts) carries the
 * channels: when it drops, this logs, and once it is back logs again and wakes everyone once
 * for what it may have missed meanwhile.
 */
export const makePgSignals = (tablePrefix: string = DEFAULT_TABLE_PREFIX, interestTimings: HintInterestTimings = DEFAULT_HINT_INTEREST) =>
  Effect.gen(function*() {
    const prefix = yield* checkTablePrefix(tablePrefix)
    const client = yield* PgClient.PgClient
    const jobs = yield* makeWakeOne
    const broker = yield* QueueIsBroker
    const webhooks = yield* makeLocalSignal
    const events = yield* makeLocalJobEvents
    const webhooksChannel = `${prefix}webhooks`
    const eventsChannel = `${prefix}job_events`
    // Once the others surely heard this process follows, its followers re-read what they follow.
    const interest = yield* makeHintInterest(`${prefix}job_follow`, events.publishAll, interestTimings)
    const wakes: Record<string, (payload: string) => Effect.Effect<void>> = {
      [jobsChannel(prefix)]: () => jobs.notify,
      [webhooksChannel]: () => webhooks.notify,
      [eventsChannel]: (payload) => (payload === EVERY_JOB ? events.publishAll : events.publish([payload as JobId])),
      [`${prefix}job_follow`]: interest.onNotification
    }

    yield* (yield* PgListener).add({
      channels: Object.keys(wakes),
      onNotification: (channel, payload) => wakes[channel]?.(payload) ?? Effect.void,
      // Whatever was notified while the connection was down was not heard: everyone looks once.
      onConnected: (reconnected) =>
        Effect.andThen(
          interest.onConnected,
          reconnected
            ? Effect.logInfo("job and webhook notifications restored: LISTEN connection re-subscribed").pipe(
              Effect.andThen(jobs.notify),
              Effect.andThen(webhooks.notify),
              Effect.andThen(events.publishAll)
            )
            : Effect.void
        ),
      onDropped: Effect.andThen(
        interest.onDropped,
        Effect.logWarning("job and webhook notifications lost: LISTEN connection dropped; reconnecting, workers poll meanwhile")
      )
    })

    // One statement for the hints of many calls at once (a claim of 24 jobs, the completions of
    // every worker fiber finishing meanwhile): one round trip, not one per job. The ids go as one
    // JSON parameter, so the statement's text (and its prepared statement) is one whatever their number.
    const publishHints = yield* makeWriteBatcher(
      (calls: ReadonlyArray<ReadonlyArray<JobId>>) =>
        client`SELECT pg_notify(${eventsChannel}, id) FROM json_array_elements_text(${JSON.stringify(calls.flat())}::json) AS id`.pipe(
          Effect.catch((error) => Effect.logWarning("could not notify job followers; they will poll", error)),
          Effect.as(calls.map(() => undefined))
        )
    )

    // After the submit's commit, not in its statement: a transaction that notifies holds
    // PostgreSQL's cluster-wide notify lock through its commit's WAL flush, so parallel submits
    // each waited for the others' flushes (docs/decisions.md, "NOTIFY after the submit"). The
    // caller does not wait, and every call made while a NOTIFY is on its way shares the next.
    const askNotify = broker ? undefined : yield* makeBackgroundWriter<void>(() =>
      client`SELECT pg_notify(${jobsChannel(prefix)}, 'jobs')`.pipe(
        Effect.asVoid,
        Effect.catchCause((cause) => Effect.logWarning("could not notify job claimers; they will poll", cause))
      ), Number.MAX_SAFE_INTEGER)
    const wakeClaimers = askNotify === undefined ? Effect.void : Effect.sync(() => askNotify())
    // Asked by each job that ends with a webhook, after its commit: as the jobs NOTIFY, the caller
    // (the worker, between its jobs) does not wait, and every call made while one is on its way
    // shares the next. A round trip per job each time was 4,000 NOTIFYs for 4,000 such jobs.
    const askWebhooksNotify = yield* makeBackgroundWriter<void>(() =>
      client`SELECT pg_notify(${webhooksChannel}, 'webhooks')`.pipe(
        Effect.asVoid,
        Effect.catchCause((cause) => Effect.logWarning("could not notify webhook dispatchers; they will poll", cause))
      ), Number.MAX_SAFE_INTEGER)

    return {
      jobs: JobSignal.of({ notify: wakeClaimers, wait: jobs.wait }),
      webhooks: WebhookSignal.of({
        notify: Effect.sync(() => askWebhooksNotify()),
        wait: webhooks.wait
      }),
      events: JobEvents.of({
        // Every process hears its own NOTIFY too, so nothing is published locally here.
        publish: (jobIds) => (jobIds.length === 0 ? Effect.void : publishHints(jobIds)),
        publishIfFollowed: (jobIds) => (jobIds.length === 0 || !interest.interested() ? Effect.void : publishHints(jobIds)),
        follow: interest.follow,
        publishAll: client`SELECT pg_notify(${eventsChannel}, ${EVERY_JOB})`.pipe(
          Effect.asVoid,
          Effect.catch((error) => Effect.logWarning("could not notify job followers; they will poll", error))
        ),
        subscribe: events.subscribe,
        subscribeAll: events.subscribeAll
      })
    }
  })

export const makePgJobSignal = (tablePrefix: string = DEFAULT_TABLE_PREFIX) =>
  Effect.map(makePgSignals(tablePrefix), (signals) => signals.jobs)

/** Wakes webhook dispatchers in every process, on `<prefix>webhooks`. */
export const makePgWebhookSignal = (tablePrefix: string = DEFAULT_TABLE_PREFIX) =>
  Effect.map(makePgSignals(tablePrefix), (signals) => signals.webhooks)

/** Both signals and the job hints over the PgClient in context (the stores' pool) and the process's LISTEN connection (PgListener). */
export const layerPgSignalsOver = (tablePrefix?: string | undefined) =>
  Layer.effectContext(
    Effect.map(makePgSignals(tablePrefix), (signals) =>
      Context.make(JobSignal, signals.jobs).pipe(
        Context.add(WebhookSignal, signals.webhooks),
        Context.add(JobEvents, signals.events)
      ))
  )

interface PgSignalOptions {
  /** A plain string or a `Redacted`. */
  readonly url: Secret
  readonly tablePrefix?: string | undefined
}

// Each with a listener layer of its own (not the `layerPgListener` constant): Effect 4 would share a
// constant with a store built around it, whose LISTEN connection may be to another database.
export const layerPgJobSignal = (options: PgSignalOptions) =>
  Layer.effect(JobSignal, makePgJobSignal(options.tablePrefix)).pipe(
    Layer.provide(Layer.effect(PgListener, makePgListener)),
    Layer.provide(PgClient.layer({ url: Redacted.make(secretValue(options.url)), maxConnections: 1 }))
  )

/** Both signals a store provides, over one small pool of their own. */
export const layerPgSignals = (options: PgSignalOptions) =>
  layerPgSignalsOver(options.tablePrefix).pipe(
    Layer.provide(Layer.effect(PgListener, makePgListener)),
    Layer.provide(PgClient.layer({ url: Redacted.make(secretValue(options.url)), maxConnections: 1 }))
  )
