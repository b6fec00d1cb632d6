import { PgClient, PgConnection } from "@effect/sql-pg"
import { Context, Deferred, Duration, Effect, Layer, Queue, Schedule, Scope } from "effect"
import type { SqlError } from "effect/sql"

/** One user of the process's LISTEN connection: its channels and what it does on each event. */
export interface PgChannels {
  readonly channels: ReadonlyArray<string>
  /** For each notification on one of `channels`. */
  readonly onNotification: (channel: string, payload: string) => Effect.Effect<void>
  /** Once its LISTEN holds (`reconnected` after a drop): whatever was notified before was not heard. */
  readonly onConnected: (reconnected: boolean) => Effect.Effect<void>
  /** When the connection ends; it reconnects, and `onConnected(true)` follows. */
  readonly onDropped: Effect.Effect<void>
}

/** Reconnects after 0.1, 0.2, 0.4 ... seconds, never waiting more than this. */
const MAX_RECONNECT_DELAY = Duration.seconds(5)

/** The application name of the connection (pg_stat_activity), which operators and the fault tests look for. */
export const LISTENER_APPLICATION_NAME = "genjobs listener"

/**
 * The process's one LISTEN connection to PostgreSQL, a session of its own outside the pool
 * (PgClient.listen would hold one of the pool's connections for each channel), shared by every user of notifications (the job and webhook signals, the stores' change
 * hints): one connection for all their channels, not one each. A user added while it is up is
 * LISTENed at once; when it drops (each channel's queue then fails), every user hears
 * `onDropped`, it reconnects with capped backoff, LISTENs every user's channels again and each
 * hears `onConnected(true)`.
 */
export class PgListener extends Context.Service<PgListener, {
  /** Listens on `users.channels` until the scope closes. */
  readonly add: (users: PgChannels) => Effect.Effect<void, never, Scope.Scope>
}>()("genjobs/PgListener") {}

/** One connection's state: its session, held for LISTEN, and the channels it LISTENs. */
interface Session {
  readonly pinned: PgConnection.PgConnection
  readonly scope: Scope.Scope
  readonly channels: Set<string>
  /** Done when the connection ended: a channel's queue failed, or a LISTEN did. */
  readonly ended: Deferred.Deferred<void>
}

/** The shared connection over the PgClient in context's settings; runs on a fiber of the layer's scope. */
export const makePgListener = Effect.gen(function*() {
  const settings: PgConnection.Config = {
    ...(yield* PgClient.PgClient).config,
    applicationName: LISTENER_APPLICATION_NAME,
    multiplex: false,
    prepare: false
  }
  const reconnectDelays = Schedule.min([Schedule.exponential(Duration.millis(100)), Schedule.spaced(MAX_RECONNECT_DELAY)])
  const users = new Set<PgChannels>()
  /** The users whose channels the current connection LISTENs, and the connection once every user's are. */
  let listening = new Set<PgChannels>()
  let current: Session | undefined
  /** Users that heard `onConnected` once: for them a later connection is a reconnection. */
  const connectedBefore = new WeakSet<PgChannels>()

  const connected = (user: PgChannels) =>
    Effect.suspend(() => {
      const reconnected = connectedBefore.has(user)
      connectedBefore.add(user)
      return user.onConnected(reconnected)
    })

  /**
   * Hands each notification to the users listening on its channel, a batch at a time (one fiber
   * per channel, for the session); ends the session when the queue fails.
   */
  const deliver = (session: Session, channel: string, queue: Queue.Dequeue<PgConnection.Notification, SqlError.SqlError>) =>
    Effect.forever(Effect.flatMap(Queue.takeAll(queue), (notifications) => {
      const hearing = [...listening].filter((user) => user.channels.includes(channel))
      return Effect.forEach(notifications, (notification) =>
        Effect.forEach(hearing, (user) => user.onNotification(channel, notification.payload), { discard: true }), { discard: true })
    })).pipe(
      Effect.onExit(() => Deferred.succeed(session.ended, undefined))
    )

  /** LISTENs the channels of `user` the session does not LISTEN yet; a failure means the connection is going. */
  const listenOn = (session: Session, user: PgChannels) =>
    Effect.forEach(user.channels, (channel) => {
      if (session.channels.has(channel)) return Effect.void
      session.channels.add(channel)
      return Effect.flatMap(
        Scope.provide(session.pinned.listen(channel), session.scope),
        (queue) => Effect.asVoid(Effect.forkIn(deliver(session, channel, queue), session.scope))
      )
    }, { discard: true }).pipe(Effect.onError(() => Deferred.succeed(session.ended, undefined)))

  /** LISTENs every user's channels on `session`, those added meanwhile included, then tells each. */
  const listenAll = (session: Session) =>
    Effect.gen(function*() {
      listening = new Set()
      for (;;) {
        const left = [...users].filter((user) => !listening.has(user))
        if (left.length === 0) break
        for (const user of left) {
          yield* listenOn(session, user)
          listening.add(user)
        }
      }
      current = session
      // A snapshot: a user added meanwhile is LISTENed and told by `add` itself.
      yield* Effect.forEach([...listening], connected, { discard: true })
    })

  /** A failed connect or LISTEN leaves nothing current: the next attempt starts over. */
  const forget = Effect.sync(() => {
    current = undefined
    listening = new Set()
  })

  /** One connection, from its connect to its end; fails if it could not LISTEN (then retried). */
  const session = Effect.scoped(Effect.gen(function*() {
    const connection = yield* PgConnection.make(settings)
    // Held for the session: every channel is LISTENed through it, and the pool never sees it.
    const pinned = yield* connection.pin
    const state: Session = { pinned, scope: yield* Effect.scope, channels: new Set(), ended: yield* Deferred.make<void>() }
    yield* Effect.onError(listenAll(state), () => forget)
    yield* Deferred.await(state.ended)
    const dropped = listening
    yield* forget
    yield* Effect.forEach(dropped, (user) => user.onDropped, { discard: true })
  }))

  // After a drop it reconnects at once, then after 0.1, 0.2, 0.4 ... s while that fails.
  yield* Effect.forkScoped(Effect.forever(Effect.retry(session, reconnectDelays)))

  const add = (user: PgChannels): Effect.Effect<void, never, Scope.Scope> =>
    Effect.acquireRelease(
      Effect.suspend(() => {
        users.add(user)
        const session = current
        // Not up yet (or reconnecting): the session LISTENs it with the others.
        if (session === undefined) return Effect.void
        return listenOn(session, user).pipe(
          Effect.andThen(Effect.suspend(() => {
            // The connection may have dropped meanwhile: the next one LISTENs it and tells it.
            if (current !== session) return Effect.void
            listening.add(user)
            return connected(user)
          })),
          // A LISTEN that failed means the connection is going: the next one takes the user.
          Effect.ignore
        )
      }),
      () =>
        Effect.sync(() => {
          users.delete(user)
          listening.delete(user)
        })
    )
  return { add } as const
})

/** The shared LISTEN connection over the PgClient in context's settings. */
export const layerPgListener = Layer.effect(PgListener, makePgListener)
