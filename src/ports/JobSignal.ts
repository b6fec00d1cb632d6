import { Context, type Effect } from "effect"

/**
 * Wakes idle workers when a job is queued. Only a hint: workers also poll, so a lost signal
 * delays a job by at most one poll interval and never loses it.
 */
export class JobSignal extends Context.Service<JobSignal, {
  readonly notify: Effect.Effect<void>
  /** Returns when notified or after `maxMs`, whichever is first. */
  readonly wait: (maxMs: number) => Effect.Effect<void>
}>()("genjobs/JobSignal") {}
