import { Context, type Effect, type Scope } from "effect"
import type { JobId } from "../domain/ids.js"

/**
 * Hints that a job's status may have changed, for whoever follows the job (the status stream,
 * long-polls). Only hints: a follower re-reads the job from the store on each one and in a slow
 * safety sweep, so a lost or doubled hint delays an update and never falsifies one.
 */
export class JobEvents extends Context.Service<JobEvents, {
  /**
   * Called after status changes committed, once for all the jobs one call changed (a claim
   * takes many); in every process sharing the store where the store allows.
   */
  readonly publish: (jobIds: ReadonlyArray<JobId>) => Effect.Effect<void>
  /**
   * A hint for every followed job, in every process where the store allows: after changes
   * whose job ids the store does not answer (the reaper's abandonments). Rare; each process
   * re-reads the jobs it follows once.
   */
  readonly publishAll: Effect.Effect<void>
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
   * watched job costs no subscription of its own. Same rules as `subscribe`.
   */
  readonly subscribeAll: (onHint: (jobId: JobId | undefined) => void) => Effect.Effect<void, never, Scope.Scope>
}>()("genjobs/JobEvents") {}
