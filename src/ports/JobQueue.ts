import { Context, type Effect, type Scope } from "effect"
import type { QueueError } from "../domain/errors.js"
import type { AccountId, JobId } from "../domain/ids.js"

/** A job to queue, with what its account's lane needs: the broker keeps one lane per account. */
export interface QueuedJob {
  readonly jobId: JobId
  readonly accountId: AccountId
  /**
   * The account's fair-share weight (an integer 1..1000): its lane gets this many turns to another
   * lane's one. Absent (the relay's republishes): the lane keeps the weight it has, 1 if new.
   */
  readonly weight?: number | undefined
}

/** One delivery of a job id to a consumer. */
export interface QueueDelivery {
  readonly jobId: JobId
  /** The adapter's handle of this delivery (a stream entry, a message), for `extend` and `ack`. */
  readonly receipt: string
}

/** A member of the queue's one group of workers, shared by every process of the engine. */
export interface QueueConsumer {
  /**
   * Up to `max` deliveries, in fair shares across the accounts' lanes (weighted round robin,
   * `src/domain/fairPick.ts`), oldest published first within a lane, waiting up to `waitMs` when none is ready.
   * A delivery neither acked nor extended within the consumer's `visibilityMs` is delivered
   * again, to any member (its holder is taken to be dead).
   */
  readonly receive: (max: number, waitMs: number) => Effect.Effect<ReadonlyArray<QueueDelivery>, QueueError>
  /** Starts each delivery's `visibilityMs` again: its job is still running. */
  readonly extend: (deliveries: ReadonlyArray<QueueDelivery>) => Effect.Effect<void, QueueError>
  /** Done with each delivery: it is never delivered again. */
  readonly ack: (deliveries: ReadonlyArray<QueueDelivery>) => Effect.Effect<void, QueueError>
}

/**
 * A broker that carries job ids from submits to workers (Redis, NATS JetStream, memory). It
 * only decides who runs which job when: the store keeps the truth. Delivery is at least once:
 * an id published twice, or redelivered after a holder stopped answering, reaches workers
 * again, and a worker's claim of the stored job (conditional on its status and lease) turns the
 * duplicate away. Every name an adapter makes in its broker starts with the engine's table
 * prefix, so two engines share one broker as they share one database.
 */
export class JobQueue extends Context.Service<JobQueue, {
  /** Adds the jobs to their accounts' lanes, in order. */
  readonly publish: (jobs: ReadonlyArray<QueuedJob>) => Effect.Effect<void, QueueError>
  /**
   * Joins the group as `name` (unique among the engine's processes) with deliveries held for
   * `visibilityMs` (the engine's job lease); leaves it when the scope closes.
   */
  readonly consume: (options: {
    readonly name: string
    readonly visibilityMs: number
  }) => Effect.Effect<QueueConsumer, QueueError, Scope.Scope>
  /**
   * One round trip to the broker, for `GET /health/ready`: fails while it cannot be reached.
   * Absent where there is no broker to reach (the memory queue).
   */
  readonly ping?: Effect.Effect<void, QueueError> | undefined
}>()("genjobs/JobQueue") {}

/**
 * Whether the engine's queue is a broker (a `JobQueue` is configured): set by the engine for its
 * store's layer, read once when a store builds its statements. The store's own queue wakes its
 * claimers as a submit commits (PostgreSQL: NOTIFY in the submit's statement); with a broker no
 * worker waits for that, so the store leaves it out.
 */
export const QueueIsBroker = Context.Reference<boolean>("genjobs/QueueIsBroker", { defaultValue: () => false })
