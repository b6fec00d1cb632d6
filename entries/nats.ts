/**
 * The job queue in NATS JetStream (a server with JetStream enabled), shared by every process of
 * the engine: `natsQueue({ servers, tablePrefix })` (or `{ url: "nats://host:port" }`) provides
 * `JobQueue`. Every name it makes starts with the table prefix (the stream `<prefix>jobs`, with
 * work-queue retention and file storage, one subject per account, `<prefix>jobs.<accountId>`, each
 * read by its durable pull consumer `<prefix>workers_<accountId>`; the core subject `<prefix>bell`),
 * so engines with other prefixes share one server. Credentials
 * (`user`/`pass`, `token`, or in the url) may be `Redacted` and are never logged. Needs
 * `@nats-io/transport-node` and `@nats-io/jetstream`.
 */
export {
  layerNatsJobQueue,
  layerNatsJobQueue as natsQueue,
  makeNatsJobQueue,
  type NatsJobQueueOptions
} from "../adapters/nats/NatsJobQueue.js"
