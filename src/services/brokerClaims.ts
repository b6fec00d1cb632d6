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
    // receive to its claim's answer: the bounds of a riding claim's wait (see `take`).
    let lastRunMs = Infinity
    let lastTakeMs = 0
    // Whether the last take rode (or tried to): the next one claims on its own, whatever ended.
    let gathered = false
    // The lease owners of the runs held here (a claim's jobs share one): a completion under one
    // of them is this worker's, which a claim by ids may ride on.
    const owners = new Map<string, number>()
    // The wake-up of a claim by ids waiting for this worker's next completion batch; whether one
    // is on its way; the fibers idle for it: those the claimer gave its take, and those freed by
    // runs that ended while it waited (the claimer, waiting for the take, claims for none of
    // them); and how the last riding claim went (ClaimRider): limit 0 is a claim that was not
    // sent, or claimed for nothing.
    let riderWake: (() => void) | undefined
    let riderTimer: ReturnType<typeof setTimeout> | undefined
    let riding = false
    let idleGiven = 0
    let rode: RiderOutcome | undefined
    const rider: ClaimRider = {
      frees: (leaseOwner) => owners.has(leaseOwner),
      takeIdle: (max) => {
        const taken = Math.min(max, idleGiven)
        idleGiven -= taken
        return taken
      },
      waiting: (wake) => {
        riderWake = wake
        if (riderTimer !== undefined) clearTimeout(riderTimer)
        riderTimer = undefined
        // Woken, it answers none unless one of this worker's completions is queued or on its way
        // (the store decides, endings.ts): at once with no run left here, else after as long as
        // the last run or take lasted (GATHER_MS at most), again while it stays, and when the
        // last run ends.
        if (wake === undefined) return
        if (held.size === 0) return wake()
        const bound = Math.min(GATHER_MS, Math.max(1, lastRunMs, lastTakeMs))
        const rearm = () => {
          riderTimer = setTimeout(() => {
            riderTimer = undefined
            riderWake?.()
            if (riderWake !== undefined) rearm()
          }, bound)
        }
        rearm()
      },
      settled: (outcome) => void (rode = outcome)
    }
    // Read through a function: `rode` is set by the store's call of `settled`, out of the take's sight.
    const wasSent = () => rode !== undefined && rode.limit > 0
    // Deliveries received for a riding claim and left over by its room: the next take claims them
    // first. Unacked, they come back to the group once their visibility passes if none does.
    const spare: Array<QueueDelivery> = []
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

    /** Takes `deliveries` as claimed where `jobs` says so; answers those it did not. */
    const hold = (deliveries: ReadonlyArray<QueueDelivery>, jobs: ReadonlyArray<Job>, claimedAt: number) => {
      const claimed = new Map(jobs.map((job) => [job.id, job.leaseOwner ?? ""]))
      const turnedAway: Array<QueueDelivery> = []
      for (const delivery of deliveries) {
        const leaseOwner = claimed.get(delivery.jobId)
        if (leaseOwner !== undefined && !held.has(delivery.jobId)) {
          held.set(delivery.jobId, { delivery, claimedAt, leaseOwner })
          owners.set(leaseOwner, (owners.get(leaseOwner) ?? 0) + 1)
        } else turnedAway.push(delivery)
      }
      return turnedAway
    }

    /**
     * Up to `max` deliveries (waiting up to `waitMs`), claimed with `claim`; answers the jobs
     * claimed. `processing` answers which of the ids are processing jobs, in one read.
     *
     * A take for few fibers while most are busy with short runs rides on this worker's
     * completions, once: it receives deliveries for its fibers and for the busy runs, and claims
     * them by ids in the write of the next completion batch of this worker's jobs (one statement
     * on PostgreSQL, ClaimOptions.besideEndings), one job for each fiber that batch frees and for
     * each of the take's; it answers more jobs than `max` then, for the fibers the batch frees. The
     * deliveries its room left over are the next take's. With none of this worker's completions
     * queued or on their way, it claims nothing: it waits instead for half the busy runs to end (at
     * most as long as the last run or take lasted, GATHER_MS at most) and answers nothing, and the
     * claimer, finding its fibers unused, claims again at once for all those idle by then. In a
     * backlog of quick jobs the runs of a claim end a round trip apart; claiming for the first
     * alone cost a claim (a receive, a claim by ids, its hint) per job or two (docs/decisions.md,
     * "Broker claims gathered", "Broker claims riding on completions").
     */
    const take = (
      max: number,
      waitMs: number,
      claim: (ids: ReadonlyArray<JobId>, besideEndings?: ClaimRider) => Effect.Effect<ReadonlyArray<Job>, StoreError>,
      processing: (ids: ReadonlyArray<JobId>) => Effect.Effect<ReadonlySet<JobId>, StoreError>
    ): Effect.Effect<ReadonlyArray<Job>, StoreError | QueueError> =>
      Effect.gen(function*() {
        const rides = !gathered && held.size >= 2 * max && lastRunMs <= GATHER_MS
        gathered = rides
        const want = rides ? max + held.size : max
        const startedAt = clock.currentTimeMillisUnsafe()
        const kept = spare.splice(0, want)
        // The worker claims uninterruptibly, so that claimed jobs always reach its fibers; the
        // wait for a delivery, which may be long, is left interruptible: a drain ends it at once,
        // and a delivery it was about to take is redelivered once its visibility passes.
        const received = kept.length >= want ? [] : yield* Effect.interruptible(consumer.receive(want - kept.length, kept.length > 0 ? 0 : waitMs))
        const deliveries = kept.length === 0 ? received : [...kept, ...received]
        if (deliveries.length === 0) return []
        if (!rides) return yield* claimAlone(deliveries, claim, processing, startedAt)
        // A store error leaves the deliveries unacked: redelivered once their visibility passes.
        rode = undefined
        idleGiven = max
        riding = true
        const jobs = yield* Effect.ensuring(claim([...new Set(deliveries.map((d) => d.jobId))], rider), Effect.sync(() => (riding = false)))
        if (!wasSent()) {
          // None rode: the claimer, finding its fibers unused, claims at once for all those idle
          // by now, with these deliveries.
          spare.unshift(...deliveries)
          return []
        }
        const claimedAt = clock.currentTimeMillisUnsafe()
        lastTakeMs = claimedAt - startedAt
        // Left over by the room, or not runnable: the next take claims them, or turns them away.
        spare.unshift(...hold(deliveries, jobs, claimedAt))
        return jobs
      })

    /** `deliveries` claimed on their own; those turned away acked unless their job is processing. */
    const claimAlone = Effect.fnUntraced(function*(
      deliveries: ReadonlyArray<QueueDelivery>,
      claim: (ids: ReadonlyArray<JobId>) => Effect.Effect<ReadonlyArray<Job>, StoreError>,
      processing: (ids: ReadonlyArray<JobId>) => Effect.Effect<ReadonlySet<JobId>, StoreError>,
      startedAt: number
    ) {
      // A store error leaves the deliveries unacked: redelivered once their visibility passes.
      const jobs = yield* claim([...new Set(deliveries.map((d) => d.jobId))])
      const claimedAt = clock.currentTimeMillisUnsafe()
      lastTakeMs = claimedAt - startedAt
      const turnedAway = hold(deliveries, jobs, claimedAt)
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
        if (riding) idleGiven++
        unacked.push(run.delivery)
        wake?.()
        // The last run ended: a riding claim stays only while one of this worker's completions is queued or on its way.
        if (held.size === 0) riderWake?.()
      })

    return { take, done } as const
  })
