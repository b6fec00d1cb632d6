import { afterAll, describe, it } from "@effect/vitest"
import { redisQueue } from "genjobs/redis"
import { deleteKeysMatching, redisAvailable, TEST_REDIS_URL } from "../support/redis.js"
import { runJobQueueConformance } from "./jobQueueSuite.js"

// Under CI an unreachable Redis throws here and fails the file; elsewhere the suite is skipped.
const available = await redisAvailable()

if (!available) {
  console.warn(`Redis is not reachable at ${TEST_REDIS_URL}: its queue suite is skipped (it fails when CI is set).`)
  describe.skip("redis (server not reachable)", () => {
    it("runs against a Redis server", () => undefined)
  })
} else {
  // Every prefix a test used: the keys it made (lanes, registry, bell) all start with it.
  const prefixes = new Set<string>()
  afterAll(() => deleteKeysMatching(TEST_REDIS_URL, [...prefixes].map((prefix) => `${prefix}*`)))

  runJobQueueConformance("redis", (prefix) => {
    prefixes.add(prefix)
    return redisQueue({ url: TEST_REDIS_URL, tablePrefix: prefix })
  })
}
