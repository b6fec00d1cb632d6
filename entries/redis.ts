/**
 * The job queue in Redis (6.2 or newer: Streams, a consumer group, XAUTOCLAIM), shared by every
 * process of the engine: `redisQueue({ url, tablePrefix })` provides `JobQueue`. Every key it makes
 * starts with the table prefix (the stream `<prefix>jobs`, holding the group `<prefix>workers`),
 * so engines with other prefixes share one Redis. Needs `@redis/client`.
 */
export {
  layerRedisJobQueue,
  layerRedisJobQueue as redisQueue,
  makeRedisJobQueue,
  type RedisJobQueueOptions
} from "../adapters/redis/RedisJobQueue.js"
