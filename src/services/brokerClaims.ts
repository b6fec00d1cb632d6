import { Cause, Clock, Duration, Effect } from "effect"
import type { QueueError, StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import type { Job } from "../domain/job.js"
import type { QueueConsumer, QueueDelivery } from "../ports/JobQueue.js"

/** How long a broker holds a worker's delivery: half as long again as the job's lease. */
export const brokerVisibilityMs = (leaseMs: number) => Math.round(leaseMs * 1.5)

/**
 * The longest a take for a few fibers waits for more of the worker's runs to end (see `take`),
 * and the longest a run may have lasted for the take to wait at all: runs this short end within a
 * round trip or two of each other; longer ones (generations) are not waited for.
 */
export const GATHER_MS = 50

/** A claimed job's delivery, held until its run ends, and when its claim answered. */
interface Held {
  readonly delivery: QueueDelivery
  readonly claimedAt: number
}

/**
 * A worker's claims through a queue broker. The broker only says which job to try: each
 * delivery is claimed in the store (`JobRepo.claimIds`, conditional on the job being
 * runnable), so a duplicate, a job that ended, or one another worker holds is turned away. A
 * turned-away delivery is acked unless its job is still processing: a lease not yet expired
 * when the broker gave up on its holder must be tried again later, not forgotten. A claimed
 * job's delivery is kept from redelivery (extended every third of the lease) until the job's
 * run ends here, then acked.
 */
export const makeBrokerClaims = (consumer: QueueConsumer, leaseMs: number) =>
  Effect.gen(function*() {
    const held = new Map<JobId, Held>()
    const clock = yield* Clock.Clock
    // How long the last run to end here lasted, from its claim, and the last take, from its
    // receive to its claim's answer: the bounds of a gathering wait (see `take`).
    let lastRunMs = Infinity
    let lastTakeMs = 0
    // Whether the last take waited for runs (the next one claims, whatever ended), and the
    // runs it waits for: a count of ends, then its wake-up.
    let gathered = false
    let endsAwaited = 0
    let gatherWake: (() => void) | undefined
    const gathering = (boundMs: number) =>
      Effect.callback<void>((resume) => {
        const timer = setTimeout(() => {
          gatherWake = undefined
          resume(Effect.void)
        }, boundMs)
        gatherWake = () => {
          gatherWake = undefined
          clearTimeout(timer)
          resume(Effect.void)
        }
        return Effect.sync(() => {
          gatherWake = undefined
          clearTimeout(timer)
        })
      })

    const ackQuietly = (deliveries: ReadonlyArray<QueueDelivery>) =>
      deliveries.length === 0 ? Effect.void : consumer.ack(deliveries).pipe(
        // Unacked, they come back once their visibility passes, and are turned away then.
        Effect.catch((error) => Effect.logWarning("queue deliveries could not be acked; they will be turned away when redelivered", error.message))
      )

    // Acks of ended runs, sent by one long-lived fiber of the worker's scope, many at once when
    // runs end faster than the broker answers: a run's end costs no fiber, and the broker one
    // call per batch instead of one per job.
    const unacked: Array<QueueDelivery> = []
    let wake: (() => void) | undefined
    const nextAcks = Effect.callback<Array<QueueDelivery>>((resume) => {
      const take = () => {
        wake = undefined
        // Taken when the fiber runs, not when it is woken: a stop in between leaves them to the
        // finalizer below.
        resume(Effect.sync(() => unacked.splice(0)))
      }
      if (unacked.length > 0) return take()
      wake = take
      return Effect.sync(() => {
        wake = undefined
      })
    })
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(nextAcks, ackQuietly)))
    // Runs before that fiber is interrupted (finalizers run last added first): the acks of runs
    // that ended as the worker drained go out before it leaves. Left, each would come back to
    // another worker once its visibility passed, to be claimed in vain and turned away.
    yield* Effect.addFinalizer(() => Effect.suspend(() => ackQuietly(unacked.splice(0))))

    yield* Effect.forkScoped(Effect.forever(
      Effect.sleep(Duration.millis(Math.max(1, Math.floor(leaseMs / 3)))).pipe(
        Effect.andThen(Effect.suspend(() => (held.size === 0 ? Effect.void : consumer.extend(Array.from(held.values(), (h) => h.delivery))))),
        Effect.catchCause((cause) => Effect.logWarning("queue deliveries of running jobs could not be extended", Cause.pretty(cause)))
      )
    ))

    /**
     * Up to `max` deliveries (waiting up to `waitMs`), claimed with `claim`; answers the jobs
     * claimed. `processing` answers which of the ids are processing jobs, in one read.
     *
     * A take for few fibers while most are busy with short runs answers nothing, once, after
     * waiting for half the busy runs to end (at most as long as the last run or take lasted,
     * GATHER_MS at most): the claimer, finding its fibers unused, claims again at once for all
     * those idle by then. In a backlog of quick jobs the runs of a claim end a round trip apart
     * (the completions' writer sends the first alone, the rest behind it); claiming for the first
     * alone cost a claim (a receive, a claim by ids, its hint) per job or two, and made half the
     * claims claims of one (docs/decisions.md, "Broker claims gathered").
     */
    const take = (
      max: number,
      waitMs: number,
      claim: (ids: ReadonlyArray<JobId>) => Effect.Effect<ReadonlyArray<Job>, StoreError>,
      processing: (ids: ReadonlyArray<JobId>) => Effect.Effect<ReadonlySet<JobId>, StoreError>
    ): Effect.Effect<ReadonlyArray<Job>, StoreError | QueueError> =>
      Effect.gen(function*() {
        if (!gathered && held.size >= 2 * max && lastRunMs <= GATHER_MS) {
          gathered = true
          endsAwaited = Math.ceil(held.size / 2)
          yield* Effect.interruptible(gathering(Math.min(GATHER_MS, Math.max(1, lastRunMs, lastTakeMs))))
          return []
        }
        gathered = false
        const startedAt = clock.currentTimeMillisUnsafe()
        // The worker claims uninterruptibly, so that claimed jobs always reach its fibers; the
        // wait for a delivery, which may be long, is left interruptible: a drain ends it at once,
        // and a delivery it was about to take is redelivered once its visibility passes.
        const deliveries = yield* Effect.interruptible(consumer.receive(max, waitMs))
        if (deliveries.length === 0) return []
        // A store error leaves the deliveries unacked: redelivered once their visibility passes.
        const jobs = yield* claim([...new Set(deliveries.map((d) => d.jobId))])
        const claimed = new Set(jobs.map((job) => job.id))
        const claimedAt = clock.currentTimeMillisUnsafe()
        lastTakeMs = claimedAt - startedAt
        const turnedAway: Array<QueueDelivery> = []
        for (const delivery of deliveries) {
          if (claimed.has(delivery.jobId) && !held.has(delivery.jobId)) held.set(delivery.jobId, { delivery, claimedAt })
          else turnedAway.push(delivery)
        }
        if (turnedAway.length === 0) return jobs
        // One read for every delivery turned away, not one each: a relay's republishes arrive
        // by the hundred. The jobs are claimed now and must reach the worker: deliveries the
        // store cannot say about stay unacked, and are turned away (and acked) when they come back.
        const running = yield* Effect.orElseSucceed(processing([...new Set(turnedAway.map((d) => d.jobId))]), () => undefined)
        if (running !== undefined) yield* ackQuietly(turnedAway.filter((delivery) => !running.has(delivery.jobId)))
        return jobs
      })

    /**
     * The job's run here ended (settled, lost its lease, or stopped on an error): its delivery
     * is acked in the background, so the worker's fiber takes its next job without waiting for
     * the broker's answer. An ack cut off by a drain leaves a delivery that is turned away later.
     */
    const done = (jobId: JobId) =>
      Effect.sync(() => {
        const run = held.get(jobId)
        if (run === undefined) return
        held.delete(jobId)
        lastRunMs = clock.currentTimeMillisUnsafe() - run.claimedAt
        if (gatherWake !== undefined && --endsAwaited <= 0) gatherWake()
        unacked.push(run.delivery)
        wake?.()
      })

    return { take, done } as const
  })
