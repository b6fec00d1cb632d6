import { Cause, Clock, Deferred, Duration, Effect, Exit, Fiber, Option, Queue, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import type { WebhookDelivery } from "../../domain/webhook.js"
import { claimLeavesRoom } from "../../domain/webhookClaims.js"
import { conclude, pastDeadline, prepare, type Prepared } from "./attempt.js"
import type { DispatchDeps } from "./deps.js"

/** The longest a claim waits for the attempts on their way (see `hold`). */
export const HOLD_MAX_MS = 20

/** A long-lived fiber that runs claimed deliveries' attempts one after the other. */
interface Runner {
  fiber: Fiber.Fiber<void> | undefined
  /** Set when its attempt passed the deadline: it takes no other, and another runner took its place. */
  retired: boolean
}

/**
 * A claimed delivery and its slot. The slot is held from the claim until the attempt's outcome
 * is recorded, or only until the attempt is sent when `freedAtSend` (see claimOnce).
 */
interface Claimed {
  readonly delivery: WebhookDelivery
  readonly freedAtSend: boolean
  held: boolean
}

/** An attempt on its way to its receiver: data the deadline keeper reads, not a fiber or a race. */
interface Sending {
  readonly deadline: number
  readonly runner: Runner
  readonly claimed: Claimed
  readonly prepared: Prepared
  /** Set once, by the first of the answer (its runner) and the deadline (the keeper). */
  settled: boolean
}

/**
 * Up to `concurrency` attempts in flight in the current scope. One claimer leases due
 * deliveries (fairly across accounts, see claimDue), in one claim for every slot free, and hands
 * them to `concurrency` long-lived runner fibers. Idle, it sleeps until the next attempt falls
 * due, a signal, a finished attempt (which may free an account at its cap) or the poll
 * interval, whichever is first. Closing the scope stops claiming and lets attempts in flight
 * finish (each is bounded by the deadline).
 *
 * In a backlog across accounts, where the store writes a claim and records at once
 * (`claimsBesideRecords`), a claim's slots come back as its attempts are sent, so the next claim
 * runs while their outcomes are recorded (docs/decisions.md, "A webhook claim runs while the last
 * claim's outcomes are recorded").
 *
 * A delivery is data all the way: no fiber, race or scope per attempt. The deadline is kept by
 * one keeper fiber over the attempts on their way, in the order they began (each has the same
 * deadline after its start): one that reaches it is recorded as timed out by a runner started in
 * its runner's place, and its runner is interrupted without being waited for, so a sender that
 * ignores interruption finishes in the background, as before, and is never recorded.
 */
export const start = (deps: DispatchDeps) => (concurrency: number): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { claim, config, deliveries, leaseMs, sender, signal } = deps
    const deadlineMs = config.webhookDeadlineMs
    const stopping = yield* Deferred.make<void>()
    const finished = yield* Queue.sliding<void>(1)
    const ready = yield* Queue.unbounded<Claimed>()
    const enrolled = yield* Queue.sliding<void>(1)
    const workerId = `whd_${randomBytes(6).toString("hex")}`
    const poll = config.pollIntervalMs
    /** Slots held (see Claimed): a slot is free while fewer than `concurrency`. */
    let running = 0
    /** Attempts claimed and not yet recorded: none left once the scope has closed. */
    let unrecorded = 0
    /** How long the last claim took, and whether it found a delivery for every slot it asked for. */
    let lastClaimMs = 0
    let lastClaimFull = false
    /** Set as the scope closes: no claim starts after it, and no wait for a slot or a hold outlasts it. */
    let stopped = false
    const runners = new Set<Runner>()
    /**
     * The attempts on their way, in the order they began, so in the order of their deadlines (a
     * Set keeps its order): each leaves it as it is answered, so it holds what is in flight.
     */
    const sending = new Set<Sending>()

    const idle = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const next = yield* deliveries.nextAttemptAfter(now).pipe(Effect.orElseSucceed(() => Option.none<number>()))
      const ms = Option.match(next, { onNone: () => poll, onSome: (at) => Math.min(poll, at - now) })
      yield* Effect.raceAll([signal.wait(ms), Queue.take(finished), Deferred.await(stopping)])
    })

    /** `claimed`'s slot back, once, and the claimer told. */
    const release = (claimed: Claimed) =>
      Effect.suspend(() => {
        if (!claimed.held) return Effect.void
        claimed.held = false
        running--
        return Queue.offer(finished, undefined)
      })

    /** `attempt`'s end, whatever it was: its slot back if still held, and the claimer told. Not for a retired runner's. */
    const settle = (me: Runner, claimed: Claimed, attempt: Effect.Effect<void, unknown>) =>
      attempt.pipe(
        Effect.catchCause((cause) =>
          Effect.logError("webhook attempt could not be recorded", { deliveryId: claimed.delivery.id }, Cause.pretty(cause))
        ),
        Effect.andThen(Effect.suspend(() => {
          if (me.retired) return Effect.void
          unrecorded--
          return claimed.held ? release(claimed) : Queue.offer(finished, undefined)
        }))
      )

    /** Sign, send, record; the deadline is the keeper's. Returns without recording once the keeper took it. */
    const attempt = Effect.fnUntraced(function*(me: Runner, claimed: Claimed) {
      const { delivery } = claimed
      const prepared = yield* prepare(deps, delivery)
      const entry: Sending = { deadline: prepared.at + deadlineMs, runner: me, claimed, prepared, settled: false }
      sending.add(entry)
      if (sending.size === 1) yield* Queue.offer(enrolled, undefined)
      const result = yield* Effect.result(sender.send(prepared.request))
      if (entry.settled) return
      entry.settled = true
      sending.delete(entry)
      if (claimed.freedAtSend) yield* release(claimed)
      yield* conclude(deps, delivery, prepared, result)
    })

    const runner = (me: Runner, first: ((me: Runner) => Effect.Effect<void>) | undefined) =>
      Effect.gen(function*() {
        if (first !== undefined) yield* first(me)
        while (!me.retired) {
          const claimed = yield* Queue.take(ready)
          yield* settle(me, claimed, attempt(me, claimed))
        }
      })

    /** A runner in the dispatcher's scope's care (interrupted without waiting when it closes), doing `first` before it takes deliveries. */
    const spawn = (first?: (me: Runner) => Effect.Effect<void>) =>
      Effect.gen(function*() {
        const me: Runner = { fiber: undefined, retired: false }
        runners.add(me)
        me.fiber = yield* Effect.forkDetach(Effect.ensuring(runner(me, first), Effect.sync(() => runners.delete(me))))
      })

    /** The attempt `entry` reached its deadline: recorded as such by a new runner, its own runner retired and interrupted. */
    const pastItsDeadline = (entry: Sending) =>
      Effect.suspend(() => {
        entry.settled = true
        const old = entry.runner
        old.retired = true
        old.fiber?.interruptUnsafe()
        // The retired runner's slot and claimer wake-up are the new one's, after its record.
        return spawn((heir) => settle(heir, entry.claimed, conclude(deps, entry.claimed.delivery, entry.prepared, pastDeadline(deadlineMs))))
      })

    /** Waits for the first attempt's deadline (or for an attempt to begin), and times out the attempts that reached theirs. */
    const keeper = Effect.forever(Effect.gen(function*() {
      const first: Sending | undefined = sending.values().next().value
      if (first === undefined) return yield* Queue.take(enrolled)
      const now = yield* Clock.currentTimeMillis
      if (first.deadline > now) return yield* Effect.sleep(Duration.millis(first.deadline - now))
      sending.delete(first)
      yield* pastItsDeadline(first)
    }))

    /** Returns once `done` holds, looking again after each finished attempt (and at the close, which offers one too). */
    const until = (done: () => boolean): Effect.Effect<void> =>
      Effect.suspend(() => (done() ? Effect.void : Effect.andThen(Queue.take(finished), until(done))))

    /**
     * While the claims keep finding a delivery for every slot (a backlog) and attempts hold slots,
     * a claim first waits for those to give them back, as long as the last claim took
     * (HOLD_MAX_MS at most). A claim costs about the same at any size (on PostgreSQL, its round
     * trips under the claims' lock), and a slot freed just after it began waits for the next
     * claim anyway: claiming at the first free slot, each claim found one or two slots free and
     * the next the rest, so a drain paid two claims for each round of slots (docs/decisions.md,
     * "Webhook claims wait for the attempts on their way").
     */
    const hold = Effect.suspend(() =>
      !lastClaimFull || running === 0 || lastClaimMs <= 0
        ? Effect.void
        : until(() => running === 0 || stopped).pipe(Effect.timeoutOption(Duration.millis(Math.min(lastClaimMs, HOLD_MAX_MS))), Effect.asVoid)
    )

    /** Claims into every free slot, once one is; waits when the claim found fewer due than it asked for; false once stopping. */
    const claimOnce = Effect.gen(function*() {
      yield* until(() => running < concurrency || stopped)
      if (stopped) return false
      yield* hold
      if (stopped) return false
      const free = concurrency - running
      running += free
      // This claim looks at everything finished so far; only later finishes should wake the loop.
      yield* Queue.clear(finished)
      const started = yield* Clock.currentTimeMillis
      const exit = yield* Effect.exit(claim(workerId, free))
      lastClaimMs = (yield* Clock.currentTimeMillis) - started
      lastClaimFull = Exit.isSuccess(exit) && exit.value.length === free
      if (Exit.isFailure(exit)) {
        running -= free
        yield* Effect.logError("webhook dispatcher could not reach the store", Cause.pretty(exit.cause))
        yield* Effect.sleep(Duration.millis(poll)).pipe(Effect.raceFirst(Deferred.await(stopping)))
        return true
      }
      // A full claim that left some account room frees its slots as its attempts are sent: the
      // next claim then runs while their outcomes are recorded, where the store writes both at
      // once. A claim that gave every account its cap keeps them until the records: a claim
      // before those would find each account still at its cap and come back empty.
      const freedAtSend = deliveries.claimsBesideRecords === true && lastClaimFull &&
        claimLeavesRoom(exit.value, config.webhookDeliveriesPerAccount)
      unrecorded += exit.value.length
      yield* Queue.offerAll(ready, exit.value.map((delivery): Claimed => ({ delivery, freedAtSend, held: true })))
      if (exit.value.length < free) {
        running -= free - exit.value.length
        yield* idle
      }
      return true
    })

    for (let i = 0; i < concurrency; i++) yield* spawn()
    yield* Effect.forkScoped(keeper)
    const claimer = yield* Effect.forkScoped(Effect.repeat(claimOnce, { while: (goOn) => goOn }))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => (stopped = true)).pipe(
        Effect.andThen(Deferred.succeed(stopping, undefined)),
        // Wakes the claimer where it waits for a slot or holds.
        Effect.andThen(Queue.offer(finished, undefined)),
        Effect.andThen(Fiber.await(claimer)),
        Effect.andThen(until(() => unrecorded === 0)),
        Effect.timeout(Duration.millis(leaseMs)),
        Effect.ignore,
        // Idle runners, and retired ones still held by a sender that ignores interruption: not waited for.
        Effect.ensuring(Effect.sync(() => runners.forEach((r) => r.fiber?.interruptUnsafe())))
      )
    )
  })
