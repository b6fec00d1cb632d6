import { Effect } from "effect"
import type { AuthFailures } from "../../src/ports/AuthFailures.js"

/** Failed authentications in memory, per client and minute bucket: one process's own counts. */
export const memoryAuthFailures = (): AuthFailures["Service"] => {
  const counts = new Map<number, Map<string, number>>()
  const countOf = (client: string, bucket: number) => counts.get(bucket)?.get(client) ?? 0
  return {
    recent: (client, bucket) => Effect.sync(() => ({ current: countOf(client, bucket), previous: countOf(client, bucket - 1) })),
    record: (client, bucket) =>
      Effect.sync(() => {
        const clients = counts.get(bucket) ?? new Map<string, number>()
        counts.set(bucket, clients.set(client, (clients.get(client) ?? 0) + 1))
      }),
    prune: (bucket) =>
      Effect.sync(() => {
        for (const stored of counts.keys()) if (stored < bucket) counts.delete(stored)
      })
  }
}
