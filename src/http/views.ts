import { Schema } from "effect"
import type { Account, ApiKey } from "../domain/account.js"
import { type Job, progressOf } from "../domain/job.js"
import type { SpendGroup, SpendQuery } from "../domain/spend.js"
import type { QueueBoard, QueuePlace } from "../domain/queuePosition.js"
import type { Stats } from "../domain/stats.js"
import type { WebhookDelivery } from "../domain/webhook.js"
import { fairWeightOf } from "../domain/fairShare.js"
import {
  type JobListItem,
  JobListItemOfJob,
  type JobView,
  JobViewOfJob,
  type SubmitResponse,
  SubmitResponseOfJob
} from "./schemas/jobs.js"
import { QueuePlaceOfPlace } from "./schemas/queue.js"

export const iso = (ms: number): string => new Date(ms).toISOString()
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms))

const encodeJobView = Schema.encodeSync(JobViewOfJob)
const encodeJobListItem = Schema.encodeSync(JobListItemOfJob)
const encodeSubmitResponse = Schema.encodeSync(SubmitResponseOfJob)

/**
 * A job as GET /v1/jobs/{id} answers it, as JSON; with `queue` (a pending job's place, null when
 * it could not be read) beside the spec's fields.
 */
export const jobView = (job: Job, queue?: QueuePlace | null): typeof JobView.Type =>
  encodeJobView({
    jobId: job.id,
    status: job.status,
    progress: progressOf(job.status),
    providerProgress: job.providerProgress ?? null,
    createdAt: job.createdAt,
    completedAt: job.completedAt,
    output: job.outputs?.[0]?.url ?? null,
    outputs: job.outputs,
    error: job.error,
    ...(queue === undefined ? {} : { queue })
  })

/** A job as GET /v1/jobs lists it, as JSON. */
export const jobListItem = (job: Job): typeof JobListItem.Type =>
  encodeJobListItem({
    jobId: job.id,
    status: job.status,
    progress: progressOf(job.status),
    providerProgress: job.providerProgress ?? null,
    model: job.model,
    createdAt: job.createdAt,
    completedAt: job.completedAt,
    error: job.error
  })

/** A submitted job as POST /v1/jobs answers it, as JSON. */
export const submitView = (job: Job): typeof SubmitResponse.Type =>
  encodeSubmitResponse({
    jobId: job.id,
    requestId: job.requestId,
    status: "pending",
    estimatedCompletionTime: job.estimatedCompletionAt,
    costMicroCents: job.costMicroCents
  })

export const accountView = (account: Account) => ({
  ...account,
  previousWebhookSecretExpiresAt: isoOrNull(account.previousWebhookSecretExpiresAt),
  budget: account.budget ?? null,
  createdAt: iso(account.createdAt),
  fairShareWeight: fairWeightOf(account)
})

export const apiKeyView = (key: ApiKey) => ({
  id: key.id,
  accountId: key.accountId,
  name: key.name,
  scopes: key.scopes,
  allowedIPs: key.allowedIPs,
  hint: key.hint,
  active: key.active,
  expiresAt: isoOrNull(key.expiresAt),
  budget: key.budget ?? null,
  createdAt: iso(key.createdAt)
})

export const deliveryView = (d: WebhookDelivery) => ({
  id: d.id,
  jobId: d.jobId,
  url: d.url,
  status: d.status,
  attempts: d.attempts.map((a) => ({ ...a, at: iso(a.at) })),
  nextAttemptAt: isoOrNull(d.nextAttemptAt),
  createdAt: iso(d.createdAt)
})

/** A spend read as the API answers it: times as ISO, days as UTC dates, the net spend beside its parts. */
export const spendView = ({ groups, query }: { readonly query: SpendQuery; readonly groups: ReadonlyArray<SpendGroup> }) => ({
  from: iso(query.from),
  to: iso(query.to),
  groupBy: query.groupBy,
  groups: groups.map(({ day, hour, ...group }) => ({
    ...group,
    ...(day === undefined ? {} : { day: iso(day).slice(0, 10) }),
    ...(hour === undefined ? {} : { hour: iso(hour) }),
    spentMicroCents: group.chargedMicroCents - group.refundedMicroCents
  }))
})

/** The queue and run times as the API answers them: times as ISO. */
export const statsView = (stats: Stats) => ({
  at: iso(stats.at),
  pendingJobs: stats.pending,
  processingJobs: stats.processing,
  from: iso(stats.from),
  to: iso(stats.to),
  runTimes: stats.runTimes
})

const encodeQueuePlace = Schema.encodeSync(QueuePlaceOfPlace)

/** A pending job's place as the status stream's `queue` event carries it, as JSON. */
export const queuePlaceView = (place: QueuePlace) => encodeQueuePlace(place)

/** The operator's queue board (QueueBook.board) as GET /admin/queue answers it. */
export const queueBoardView = (board: QueueBoard) => ({
  at: iso(board.at),
  waitingGroups: board.waitingGroups,
  groups: board.groups.map((group) => ({ ...group, first: queuePlaceView(group.first), last: queuePlaceView(group.last) }))
})
