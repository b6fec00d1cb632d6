import { Cause, Clock, Duration, Effect } from "effect"
import type { QueueError, StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import type { Job } from "../domain/job.js"
import type { QueueConsumer, QueueDelivery } from "../ports/JobQueue.js"
import type { ClaimRider, RiderOutcome } from "../ports/JobRepo.js"

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
  readonly leaseOwner: string
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
    // The lease owners of the runs held here (a claim's jobs share one): a completion under one
    // of them is this worker's, which a claim by ids may ride on.
    const owners = new Map<string, number>()
    // The wake-up of a claim by ids waiting for this worker's next completion batch, and how the
    // last riding claim went (ClaimRider): limit 0 is a claim that was not sent.
    let riderWake: (() => void) | undefined
    let rode: RiderOutcome | undefined
    const rider: ClaimRider = {
      frees: (leaseOwner) => owners.has(leaseOwner),
      takeIdle: (max) => max,
      waiting: (wake) => {
        riderWake = wake
        // Parked with none of this worker's completions queued or on their way, it answers none
        // at once (the store decides, endings.ts), and the ids are claimed on their own.
        wake?.()
      },
      settled: (outcome) => void (rode = outcome)
    }
    // Read through a function: `rode` is set by the store's call of `settled`, out of the take's sight.
    const wasSent = () => rode !== undefined && rode.limit > 0
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
     *
     * While short runs are held here the claim by ids rides on this worker's completions
     * (ClaimOptions.besideEndings): it goes in the write of the next completion batch of this
     * worker's jobs (one statement on PostgreSQL) rather than as a statement of its own. With no
     * completion of this worker queued or on its way, it answers none at once and the ids are
     * claimed on their own, as they are when a run that ends without a completion wakes it.
     */
    const take = (
      max: number,
      waitMs: number,
      claim: (ids: ReadonlyArray<JobId>, besideEndings?: ClaimRider) => Effect.Effect<ReadonlyArray<Job>, StoreError>,
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
        const ids = [...new Set(deliveries.map((d) => d.jobId))]
        rode = undefined
        const riding = held.size > 0 && lastRunMs <= GATHER_MS ? yield* claim(ids, rider) : undefined
        // Answered none without being sent (woken, or its write failed): claimed on their own.
        const jobs = riding !== undefined && wasSent() ? riding : yield* claim(ids)
        const claimed = new Map(jobs.map((job) => [job.id, job.leaseOwner ?? ""]))
        const claimedAt = clock.currentTimeMillisUnsafe()
        lastTakeMs = claimedAt - startedAt
        const turnedAway: Array<QueueDelivery> = []
        for (const delivery of deliveries) {
          const leaseOwner = claimed.get(delivery.jobId)
          if (leaseOwner !== undefined && !held.has(delivery.jobId)) {
            held.set(delivery.jobId, { delivery, claimedAt, leaseOwner })
            owners.set(leaseOwner, (owners.get(leaseOwner) ?? 0) + 1)
          } else turnedAway.push(delivery)
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
        const left = owners.get(run.leaseOwner)! - 1
        if (left > 0) owners.set(run.leaseOwner, left)
        else owners.delete(run.leaseOwner)
        lastRunMs = clock.currentTimeMillisUnsafe() - run.claimedAt
        if (gatherWake !== undefined && --endsAwaited <= 0) gatherWake()
        unacked.push(run.delivery)
        wake?.()
        // A run ended: a claim riding on completions stays only while one of this worker's is queued or on its way.
        riderWake?.()
      })

    return { take, done } as const
  })
