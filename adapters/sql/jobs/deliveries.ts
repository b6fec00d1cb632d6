import { Array as Arr, Effect } from "effect"
import type { JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import type { JobSql } from "../queue/context.js"
import { storeErrors } from "../rows.js"

/** The webhook outbox rows a job's end writes in its transaction (SqlWebhooks delivers them). */
export const makeDeliveryInserts = ({ sql, t }: JobSql): JobStoreDriver["insertDeliveries"] => (deliveries) =>
  (!Arr.isReadonlyArrayNonEmpty(deliveries) ? Effect.void : sql`INSERT INTO ${t.webhook_deliveries} ${
    sql.insert(Arr.map(deliveries, (delivery) => ({
      id: delivery.id,
      job_id: delivery.jobId,
      account_id: delivery.accountId,
      url: delivery.url,
      payload: delivery.payload,
      status: delivery.status,
      attempts: JSON.stringify(delivery.attempts),
      next_attempt_at: delivery.nextAttemptAt,
      lease_owner: delivery.leaseOwner,
      lease_expires_at: delivery.leaseExpiresAt,
      created_at: delivery.createdAt
    })))
  }`.pipe(Effect.asVoid)).pipe(storeErrors("insert webhook deliveries"))
