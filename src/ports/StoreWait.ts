import { Fiber, FiberRef, Option } from "effect"

/**
 * What a request may still wait for the store (for connections), in milliseconds, over all its
 * store calls: each wait takes its time off. A store call that would wait longer fails with
 * StoreBusy, before anything reaches the store.
 */
export interface StoreWaitBudget {
  remainingMs: number
  /**
   * Whether the request was already served by the store once: it is under way, and a store
   * may serve it before requests that have not started (what it was served was work for it).
   */
  underWay: boolean
}

/** A request's budget before it touched the store. */
export const storeWaitBudget = (ms: number): StoreWaitBudget => ({ remainingMs: ms, underWay: false })

/**
 * The current fiber's StoreWaitBudget; undefined: no budget, wait as long as the store's own
 * timeout allows. The HTTP layer gives each request one, so everything a request does (and the
 * fibers it forks, which share it) is bounded, while workers, sweepers and dispatchers, started
 * outside any request, wait and retry. A store reads it where its callers wait (a pool's
 * connect) from the fiber running there: no Context copy or fork per request.
 */
export const StoreWaitBudget = FiberRef.unsafeMake<StoreWaitBudget | undefined>(undefined)

/** The budget of the fiber running now, for a driver's callback-style code to read synchronously. */
export const currentStoreWaitBudget = (): StoreWaitBudget | undefined => {
  const fiber = Fiber.getCurrentFiber()
  return Option.isSome(fiber) ? fiber.value.getFiberRef(StoreWaitBudget) : undefined
}
