import { GenjobsError } from "./errors.js"
import { readEvents } from "./eventStream.js"
import { sleep, type Transport } from "./transport.js"
import { type Job, type QueuePlace, TERMINAL_STATUSES } from "./types.js"

export interface WaitOptions {
  /** Called with the job each time its status or progress changes. */
  readonly onUpdate?: ((job: Job) => void) | undefined
  /**
   * Called with a pending job's place in the queue (position, jobs ahead, estimated start and
   * end) each time it changes: from the status stream's `queue` events, or a poll's `queue` field.
   */
  readonly onQueueUpdate?: ((queue: QueuePlace) => void) | undefined
  /** Stops waiting (the job itself goes on); the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined
  /** How long one poll may be held by the server (`Prefer: wait=N`). Default 20 s. */
  readonly waitSeconds?: number | undefined
}

/** Whether this server has the status stream: once it answers that it has not, the client only polls. */
export interface StreamSupport {
  events: boolean
}

// Polls of a server that answers at once back off from 250 ms to 2 s, and start over on a change.
const MIN_POLL_MS = 250
const MAX_POLL_MS = 2_000

const isTerminal = (job: Job) => TERMINAL_STATUSES.includes(job.status)

/** Reports a job when it differs from the last one reported. */
const reporter = (onUpdate: WaitOptions["onUpdate"]) => {
  let last = ""
  return (job: Job): boolean => {
    const key = `${job.status}:${job.progress}`
    if (key === last) return false
    last = key
    onUpdate?.(job)
    return true
  }
}

/** Reports a queue place when it differs from the last one reported. */
const queueReporter = (onQueueUpdate: WaitOptions["onQueueUpdate"]) => {
  let last = ""
  return (queue: QueuePlace | null | undefined) => {
    if (queue == null || onQueueUpdate === undefined) return
    const key = JSON.stringify(queue)
    if (key === last) return
    last = key
    onQueueUpdate(queue)
  }
}

type QueueReport = ReturnType<typeof queueReporter>

const placeOf = (data: string): QueuePlace | undefined => {
  try {
    const value = JSON.parse(data)
    return typeof value?.position === "number" && typeof value?.ahead === "number" ? value : undefined
  } catch {
    return undefined
  }
}

const jobOf = (data: string): Job | undefined => {
  try {
    const value = JSON.parse(data)
    return typeof value?.jobId === "string" && typeof value?.status === "string" ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * GET /v1/jobs/{id}/events: an event per status change carrying the job, the final one on a
 * terminal status. A stream that ends early is resumed with Last-Event-ID. Undefined when the
 * server has no stream or it keeps failing: the caller polls instead.
 */
const follow = async (
  transport: Transport,
  jobId: string,
  report: (job: Job) => boolean,
  reportQueue: QueueReport,
  support: StreamSupport,
  signal: AbortSignal | undefined
): Promise<Job | undefined> => {
  let lastEventId: string | undefined
  for (let n = 0; n <= transport.retries; n++) {
    let response: Response
    try {
      response = await transport.request({
        method: "GET",
        path: `/v1/jobs/${encodeURIComponent(jobId)}/events`,
        headers: { accept: "text/event-stream", ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) },
        retry: false,
        signal,
        timeoutMs: 0
      }, async (r) => r)
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      // A 404 other than the job's own means no such route: this server has no stream.
      if (error instanceof GenjobsError && error.status === 404 && error.code !== "JOB_NOT_FOUND") support.events = false
      return undefined
    }
    if (!(response.headers.get("content-type") ?? "").includes("text/event-stream") || response.body === null) {
      await response.body?.cancel()
      support.events = false
      return undefined
    }
    try {
      for await (const event of readEvents(response.body)) {
        lastEventId = event.id ?? lastEventId
        // A pending job's place: an event named `queue` beside the status events.
        if (event.event === "queue") {
          reportQueue(placeOf(event.data))
          continue
        }
        const job = jobOf(event.data)
        if (job === undefined) continue
        report(job)
        if (isTerminal(job)) return job
      }
    } catch {
      if (signal?.aborted) throw signal.reason
    }
  }
  return undefined
}

/** GET /v1/jobs/{id} with `Prefer: wait=N` (RFC 7240) until the job is final; a server that answers at once is polled with backoff. */
const poll = async (
  transport: Transport,
  jobId: string,
  report: (job: Job) => boolean,
  reportQueue: QueueReport,
  options: WaitOptions
): Promise<Job> => {
  const waitSeconds = options.waitSeconds ?? 20
  let delay = MIN_POLL_MS
  for (;;) {
    const started = Date.now()
    const job = await transport.json<Job>({
      method: "GET",
      path: `/v1/jobs/${encodeURIComponent(jobId)}`,
      headers: { prefer: `wait=${waitSeconds}` },
      retry: true,
      signal: options.signal,
      timeoutMs: transport.timeoutMs + waitSeconds * 1000
    })
    if (report(job)) delay = MIN_POLL_MS
    if (job.status === "pending") reportQueue(job.queue)
    if (isTerminal(job)) return job
    await sleep(Math.max(0, delay - (Date.now() - started)), options.signal)
    delay = Math.min(delay * 2, MAX_POLL_MS)
  }
}

/** Resolves with the job once it is completed, failed or cancelled. */
export const waitForJob = async (transport: Transport, jobId: string, support: StreamSupport, options: WaitOptions = {}): Promise<Job> => {
  const report = reporter(options.onUpdate)
  const reportQueue = queueReporter(options.onQueueUpdate)
  const streamed = support.events ? await follow(transport, jobId, report, reportQueue, support, options.signal) : undefined
  return streamed ?? poll(transport, jobId, report, reportQueue, options)
}
