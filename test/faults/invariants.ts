import type { FaultDb, ReceivedWebhook, Tally } from "./harness.js"

const TERMINAL = new Set(["completed", "failed", "cancelled"])

interface JobRow {
  id: string
  account_id: string
  status: string
  cost_micro_cents: string
  attempts: number
  webhook_url: string | null
  completed_at: string | null
  created_at: string
  outputs: string | null
}

export interface InvariantReport {
  /** Every broken rule, one line each: the assertion is that this is empty. */
  readonly violations: Array<string>
  readonly jobs: number
  readonly byStatus: Record<string, number>
  /** Jobs claimed more than once (a worker died or lost its lease). */
  readonly reclaimed: number
  readonly deliveries: number
}

/**
 * What must hold after any fault once the run has settled, read from the database itself:
 * - every job a client was answered 200 with a jobId for exists and is terminal, and so is every other job;
 * - when `unconfirmed` is given, no job exists that its client was told was not queued;
 * - no job ran to an end twice: at most one charge and one refund each, a refund exactly when it
 *   failed or was cancelled, and a completed or failed job with a webhook has exactly one
 *   delivery whose payload is the job's final state (status, completion time, first output); a
 *   second ending would have left a payload that no longer matches the row;
 * - no job was claimed more often than JOB_MAX_ATTEMPTS;
 * - every account's balance is the sum of its ledger, and its spend rollups sum to the ledger's
 *   charges and refunds (with its jobs, failures and cancellations counted once each);
 * - every delivery's recorded attempts are numbered 1, 2, 3 ... (each recorded once), and the
 *   receiver, when given, got each (delivery, attempt) at most once and nothing for a delivery
 *   that does not exist;
 * - no answer was a 5xx other than 503, and every 503 carried Retry-After.
 */
export const checkInvariants = async (db: FaultDb, options: {
  readonly accepted: ReadonlyArray<string>
  /**
   * Given, every stored job must be accepted or named by a 503 that could not say whether it
   * was queued: a submit answered "nothing was charged" left nothing behind.
   */
  readonly unconfirmed?: ReadonlyArray<string>
  readonly tally: Tally
  readonly maxAttempts?: number
  readonly received?: ReadonlyArray<ReceivedWebhook>
}): Promise<InvariantReport> => {
  const violations: Array<string> = []
  const maxAttempts = options.maxAttempts ?? 3
  const jobs = await db.query<JobRow>(
    "SELECT id, account_id, status, cost_micro_cents, attempts, webhook_url, completed_at, created_at, outputs FROM genjobs_jobs"
  )
  const byId = new Map(jobs.map((job) => [job.id, job]))
  for (const id of options.accepted) if (!byId.has(id)) violations.push(`accepted job ${id} is not in the database`)
  if (options.unconfirmed !== undefined) {
    const answered = new Set([...options.accepted, ...options.unconfirmed])
    for (const job of jobs) if (!answered.has(job.id)) violations.push(`job ${job.id} is stored though its submit was answered as not queued`)
  }
  const byStatus: Record<string, number> = {}
  for (const job of jobs) {
    byStatus[job.status] = (byStatus[job.status] ?? 0) + 1
    if (!TERMINAL.has(job.status)) violations.push(`job ${job.id} is still ${job.status}`)
    if (job.attempts > maxAttempts) violations.push(`job ${job.id} was claimed ${job.attempts} times (max ${maxAttempts})`)
  }

  const ledger = await db.query<{ job_id: string; kind: string; amount: string; n: string }>(
    `SELECT job_id, kind, SUM(amount_micro_cents) AS amount, COUNT(*) AS n FROM genjobs_ledger
     WHERE job_id IS NOT NULL GROUP BY job_id, kind`
  )
  const entries = new Map<string, { amount: number; n: number }>()
  for (const row of ledger) entries.set(`${row.job_id} ${row.kind}`, { amount: Number(row.amount), n: Number(row.n) })
  for (const job of jobs) {
    const cost = Number(job.cost_micro_cents)
    const charge = entries.get(`${job.id} charge`)
    const refund = entries.get(`${job.id} refund`)
    if (cost > 0 && (charge?.n !== 1 || charge.amount !== -cost)) {
      violations.push(`job ${job.id} (cost ${cost}) has charges ${JSON.stringify(charge)}`)
    }
    const refunds = job.status === "failed" || job.status === "cancelled"
    if (refunds && cost > 0 && (refund?.n !== 1 || refund.amount !== cost)) {
      violations.push(`job ${job.id} ${job.status} has refunds ${JSON.stringify(refund)}`)
    }
    if (!refunds && refund !== undefined) violations.push(`job ${job.id} ${job.status} was refunded ${JSON.stringify(refund)}`)
  }
  for (const key of entries.keys()) {
    if (!byId.has(key.split(" ")[0]!)) violations.push(`ledger entry ${key} names no job`)
  }

  const accounts = await db.query<{ id: string; balance: string; ledger: string }>(
    `SELECT a.id, a.balance_micro_cents AS balance,
       (SELECT COALESCE(SUM(l.amount_micro_cents), 0) FROM genjobs_ledger l WHERE l.account_id = a.id) AS ledger
     FROM genjobs_accounts a`
  )
  for (const account of accounts) {
    if (account.balance !== account.ledger) {
      violations.push(`account ${account.id}: balance ${account.balance} but ledger sums to ${account.ledger}`)
    }
  }

  // The spend rollups are written with each ledger line, so per account they sum to the ledger's
  // charges and refunds, and count its jobs, failures and cancellations.
  const rollups = await db.query<{ id: string; rolled: string; booked: string }>(
    `SELECT a.id,
       (SELECT COALESCE(SUM(s.charged_micro_cents), 0) || ' ' || COALESCE(SUM(s.refunded_micro_cents), 0) || ' ' ||
               COALESCE(SUM(s.jobs), 0) || ' ' || COALESCE(SUM(s.failed), 0) || ' ' || COALESCE(SUM(s.cancelled), 0)
        FROM genjobs_spend_hourly s WHERE s.account_id = a.id) AS rolled,
       (SELECT COALESCE(SUM(CASE WHEN l.kind = 'charge' THEN -l.amount_micro_cents ELSE 0 END), 0) || ' ' ||
               COALESCE(SUM(CASE WHEN l.kind = 'refund' THEN l.amount_micro_cents ELSE 0 END), 0) || ' ' ||
               COUNT(*) FILTER (WHERE l.kind = 'charge') || ' ' ||
               COUNT(*) FILTER (WHERE l.kind = 'refund' AND j.status = 'failed') || ' ' ||
               COUNT(*) FILTER (WHERE l.kind = 'refund' AND j.status = 'cancelled')
        FROM genjobs_ledger l LEFT JOIN genjobs_jobs j ON j.id = l.job_id
        WHERE l.account_id = a.id AND l.kind IN ('charge', 'refund')) AS booked
     FROM genjobs_accounts a`
  )
  for (const account of rollups) {
    if (account.rolled !== account.booked) {
      violations.push(`account ${account.id}: spend rollups (charged refunded jobs failed cancelled) ${account.rolled} but the ledger says ${account.booked}`)
    }
  }

  const deliveries = await db.query<{ id: string; job_id: string; status: string; attempts: string; payload: string }>(
    "SELECT id, job_id, status, attempts, payload FROM genjobs_webhook_deliveries ORDER BY job_id, id"
  )
  const deliveriesOf = new Map<string, number>()
  for (const delivery of deliveries) {
    deliveriesOf.set(delivery.job_id, (deliveriesOf.get(delivery.job_id) ?? 0) + 1)
    const job = byId.get(delivery.job_id)
    const payload = JSON.parse(delivery.payload)
    if (job === undefined) {
      violations.push(`delivery ${delivery.id} names no job`)
    } else {
      const firstOutput = job.outputs === null ? undefined : JSON.parse(job.outputs)[0]?.url
      const completedAt = new Date(Number(job.completed_at ?? job.created_at)).toISOString()
      if (payload.status !== job.status || payload.completedAt !== completedAt || payload.output?.url !== firstOutput) {
        violations.push(
          `delivery ${delivery.id} carries ${payload.status} at ${payload.completedAt} (${payload.output?.url}) but job ${job.id} is ${job.status} at ${completedAt} (${firstOutput})`
        )
      }
    }
    const numbers = (JSON.parse(delivery.attempts) as Array<{ attempt: number }>).map((a) => a.attempt)
    if (numbers.some((n, i) => n !== i + 1)) violations.push(`delivery ${delivery.id} recorded attempts ${numbers.join(",")}`)
  }
  for (const job of jobs) {
    const due = job.webhook_url !== null && (job.status === "completed" || job.status === "failed")
    const count = deliveriesOf.get(job.id) ?? 0
    if (count !== (due ? 1 : 0)) violations.push(`job ${job.id} ${job.status} has ${count} webhook deliveries`)
  }

  if (options.received !== undefined) {
    const known = new Set(deliveries.map((d) => d.id))
    const seen = new Set<string>()
    for (const request of options.received) {
      const key = `${request.deliveryId} #${request.attempt}`
      if (seen.has(key)) violations.push(`receiver got ${key} twice`)
      seen.add(key)
      if (!known.has(request.deliveryId)) violations.push(`receiver got ${key}, which is no delivery`)
    }
  }

  for (const error of options.tally.serverErrors) violations.push(`answered ${error}`)
  for (const error of options.tally.unavailableWithoutRetryAfter) violations.push(`503 without Retry-After: ${error}`)

  return {
    violations,
    jobs: jobs.length,
    byStatus,
    reclaimed: jobs.filter((job) => job.attempts > 1).length,
    deliveries: deliveries.length
  }
}
