import { Context, type Effect, type Scope } from "effect"
import type { JobId } from "../domain/ids.js"

/**
 * Hints that a job's status may have changed, for whoever follows the job (the status stream,
 * long-polls). Only hints: a follower re-reads the job from the store on each one and in a slow
 * safety sweep, so a lost or doubled hint delays an update and never falsifies one.
 */
export class JobEvents extends Context.Service<JobEvents, {
  /**
   * Called after status changes committed, once for all the jobs one call changed; in every
   * process sharing the store where the store allows. For rare changes someone may act on
   * whether or not a process follows jobs (a cancel reaches the running job's provider poller, a
   * provider callback its generation's): always sent.
   */
  readonly publish: (jobIds: ReadonlyArray<JobId>) => Effect.Effect<void>
  /**
   * As `publish`, for the changes of every job (claims, endings): only those who follow jobs
   * (`follow`) want them, and a store whose hints cost a statement skips them while no process
   * sharing it follows. A process that starts following hears those committed after a short,
   * store-specific delay (PostgreSQL: 1 s, `settle` in adapters/sql/pgHintInterest.ts); its own
   * safety re-reads cover the gap.
   */
  readonly publishIfFollowed: (jobIds: ReadonlyArray<JobId>) => Effect.Effect<void>
  /**
   * A hint for every followed job, in every process where the store allows: after changes
   * whose job ids the store does not answer (the reaper's abandonments). Rare; each process
   * re-reads the jobs it follows once.
   */
  readonly publishAll: Effect.Effect<void>
  /**
   * Says this process follows jobs changed by any process (an open status stream, long-poll or
   * changes stream), until the returned function is called; calls nest. Synchronous: the store
   * tells the other processes in the background, and hints this process's followers once more
   * (as `publishAll`) when those told may still have skipped a change (PostgreSQL: `settle`, 1 s,
   * after the first follow).
   */
  readonly follow: () => () => void
  /**
   * Calls `onHint` for each of the job's hints from now until the scope closes: a hint
   * published after this effect returned is not missed, so a follower subscribes first and
   * reads the job second. `onHint` is called synchronously and must return at once. For a
   * follower of one job (a provider run's poller); watchers of many use `subscribeAll`.
   */
  readonly subscribe: (jobId: JobId, onHint: () => void) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Calls `onHint` with the job id of every hint from now until the scope closes, `undefined`
   * for a hint of every job (publishAll, or a gap in which hints may have been lost). One
   * subscription for a whole process's watchers (JobFollow keeps them in a map by job id), so a
   * watched job costs no subscription of its own. Same rules as `subscribe`; hints published
   * with `publishIfFollowed` come only while some process follows.
   */
  readonly subscribeAll: (onHint: (jobId: JobId | undefined) => void) => Effect.Effect<void, never, Scope.Scope>
}>()("genjobs/JobEvents") {}
