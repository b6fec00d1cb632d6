import { Effect } from "effect"

/** Polls `check` every 20 ms until it holds or `ms` pass; answers whether it held. */
export const waitFor = async (check: () => Promise<boolean> | boolean, ms = 10_000) => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return false
}

/** Waits (polling every 5 ms) until `condition` holds, failing after `withinMs`. */
export const until = <E = never, R = never>(what: string, condition: () => boolean | Effect.Effect<boolean, E, R>, withinMs = 60_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + withinMs
    for (;;) {
      const value = condition()
      if (typeof value === "boolean" ? value : yield* value) return
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("5 millis")
    }
  })
