import { Context, Fiber } from "effect"

/**
 * A request's dealings with the store's queue. Until the store first served it, the request may
 * be shed: its wait for a connection is bounded by `boundMs`, and nothing of it was written.
 * Once served it is under way: it is never shed (something of it may be written, and a shed
 * answer says nothing was), and a store may serve it before requests that have not started.
 */
export interface RequestStoreWait {
  /** What is left of the bound: a queue the request waited in before the pool's takes its wait off. */
  boundMs: number
  underWay: boolean
}

/** A request's wait before it touched the store. */
export const requestStoreWait = (boundMs: number): RequestStoreWait => ({ boundMs, underWay: false })

/**
 * The current fiber's RequestStoreWait; undefined outside any request. The HTTP layer provides
 * it once per request (`Effect.provideService`), so everything a request does (and the fibers it
 * forks, which inherit it) is bounded, while workers, sweepers and dispatchers, started outside
 * any request, wait up to the store's own timeout and retry. A store reads it where its callers
 * wait (a pool's connect), from the fiber running there: no fork per request, and nothing passed
 * down the store's calls.
 */
export const RequestStoreWait = Context.Reference<RequestStoreWait | undefined>("genjobs/RequestStoreWait", {
  defaultValue: () => undefined
})

/** The wait of the request whose fiber runs now, for a driver's callback-style code to read synchronously. */
export const currentRequestStoreWait = (): RequestStoreWait | undefined => {
  const fiber = Fiber.getCurrent()
  return fiber === undefined ? undefined : fiber.getRef(RequestStoreWait)
}
