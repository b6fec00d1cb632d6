import { createClient } from "@redis/client"
import { Duration, Effect } from "effect"
import { QueueError } from "../../src/domain/errors.js"

/** How long connecting (at the start, and for each consumer) may take before it fails. */
const CONNECT_TIMEOUT_MS = 5_000
/**
 * How long a command may go unanswered before it fails (a blocking read: past its wait). Commands
 * on a dropped connection fail at once; this bounds the rarer silent one (a peer gone without a
 * reset), which TCP keep-alive only notices much later.
 */
export const COMMAND_TIMEOUT_MS = 5_000

/** Reconnects after about 50, 100, 200 ... ms, never waiting more than 2 s between attempts. */
const reconnectStrategy = (retries: number) => Math.min(50 * 2 ** retries, 2_000) + Math.floor(Math.random() * 50)

export const makeClient = (url: string) =>
  createClient({
    url,
    // Commands issued while the connection is down fail at once instead of waiting for it.
    disableOfflineQueue: true,
    socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy }
  })

export type Client = ReturnType<typeof makeClient>

export const reasonOf = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/**
 * The command's promise as an effect failing with a QueueError naming `operation`, within
 * `timeoutMs`: one timer beside the promise, not a race of two fibers (Effect.timeout), since
 * every receive and ack goes through here.
 */
export const call = <A>(operation: string, run: () => Promise<A>, timeoutMs = COMMAND_TIMEOUT_MS) =>
  Effect.callback<A, QueueError>((resume) => {
    let settled = false
    const settle = (effect: Effect.Effect<A, QueueError>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(effect)
    }
    const failed = (cause: unknown) =>
      settle(Effect.fail(new QueueError({ message: `Redis queue: ${operation} failed: ${reasonOf(cause)}`, cause })))
    const timer = setTimeout(
      () => settle(Effect.fail(new QueueError({ message: `Redis queue: ${operation} got no answer within ${timeoutMs} ms` }))),
      timeoutMs
    )
    try {
      run().then((value) => settle(Effect.succeed(value)), failed)
    } catch (cause) {
      failed(cause)
    }
    // Interrupted: the command goes on in Redis; its answer is dropped.
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
    })
  })

/**
 * A connected client, destroyed when the scope closes. It listens to its "error" events (node-redis
 * throws them otherwise) and logs once when its connection drops and once when it is back; it
 * reconnects in the background meanwhile, while its commands fail at once.
 */
export const connected = (make: () => Client, role: string) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const log = (effect: Effect.Effect<void>) => void Effect.runForkWith(context)(effect)
    let lastError: unknown = undefined
    const client = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const client = make()
          let down = false
          let closed = false
          client.on("error", (error: unknown) => {
            lastError = error
            if (down || closed) return
            down = true
            log(Effect.logWarning(`Redis queue: ${role} connection failed (${reasonOf(error)}); reconnecting`))
          })
          client.on("ready", () => {
            if (!down || closed) return
            down = false
            log(Effect.logInfo(`Redis queue: ${role} connection restored`))
          })
          client.on("end", () => {
            closed = true
          })
          return client
        },
        // The URL's parser names the URL in its errors: keep it (and its password) out.
        catch: () => new QueueError({ message: "Redis queue: the url is not a valid redis:// or rediss:// URL" })
      }),
      (client) => Effect.sync(() => client.destroy())
    )
    yield* Effect.tryPromise({
      try: () => client.connect(),
      catch: (cause) => new QueueError({ message: `Redis queue: connect (${role}) failed: ${reasonOf(cause)}`, cause })
    }).pipe(
      // The client retries a refused connection until it is closed: give up at the deadline.
      Effect.timeoutOrElse({
        duration: Duration.millis(CONNECT_TIMEOUT_MS),
        orElse: () =>
          Effect.fail(
            new QueueError({
              message: `Redis queue: connect (${role}) failed within ${CONNECT_TIMEOUT_MS} ms` +
                (lastError === undefined ? "" : `: ${reasonOf(lastError)}`),
              cause: lastError
            })
          )
      })
    )
    return client
  })
