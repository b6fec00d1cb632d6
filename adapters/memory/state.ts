import { Effect, Semaphore } from "effect"
import type { Account, ApiKey, LedgerEntry } from "../../src/domain/account.js"
import type { ChangeEntry } from "../../src/domain/change.js"
import type { StoredCatalog } from "../../src/ports/CatalogRepo.js"
import { emptyCatalog } from "../../src/domain/catalog.js"
import type { SpendRollup } from "../../src/domain/spend.js"
import type { IdempotencyRecord } from "../../src/ports/JobStoreDriver.js"
import type { LogLine } from "../../src/domain/providerLogs.js"
import type { Upload } from "../../src/domain/upload.js"
import type { WebhookDelivery } from "../../src/domain/webhook.js"
import { IndexedJobs } from "./jobIndex.js"

/** All in-memory state; one semaphore makes each repo operation atomic, like a transaction. */
export interface MemoryState {
  readonly accounts: Map<string, Account>
  readonly ledger: Array<LedgerEntry>
  /** Spend rollups by rollupKey (src/domain/spend.ts's SpendRollup). */
  readonly spend: Map<string, SpendRollup>
  readonly keys: Map<string, ApiKey>
  /** By id, with the claim's orders kept as jobs are written (jobIndex.ts). */
  readonly jobs: IndexedJobs
  readonly idempotency: Map<string, IdempotencyRecord>
  readonly deliveries: Map<string, WebhookDelivery>
  readonly uploads: Map<string, Upload>
  /** Rate-limit buckets by (account, model, version, window), then by bucket start. */
  readonly rateWindows: Map<string, Map<number, { readonly n: number; readonly oldest: number }>>
  /** Provider starts by limit scope, then by bucket start of the minute window. */
  readonly providerStarts: Map<string, Map<number, { readonly n: number; readonly oldest: number }>>
  readonly leases: Map<string, { readonly owner: string; readonly expiresAt: number }>
  /** Each job's kept provider log lines, in order (MemoryJobLogs.ts). */
  readonly jobLogs: Map<string, Array<LogLine>>
  catalog: StoredCatalog
  readonly lock: Semaphore.Semaphore
  /** The changes feed, in feed order (`seq`, `txn` always 0), and the last seq drawn. */
  readonly changes: { readonly entries: Array<ChangeEntry>; seq: number }
}

export const makeMemoryState: Effect.Effect<MemoryState> = Effect.map(Semaphore.make(1), (lock) => ({
  accounts: new Map(),
  ledger: [],
  spend: new Map(),
  keys: new Map(),
  jobs: new IndexedJobs(),
  idempotency: new Map(),
  deliveries: new Map(),
  uploads: new Map(),
  rateWindows: new Map(),
  providerStarts: new Map(),
  leases: new Map(),
  jobLogs: new Map(),
  catalog: { document: emptyCatalog, revision: 0 },
  lock,
  changes: { entries: [], seq: 0 }
}))

/** Net spend (charges less refunds) of the account's rollups from `since`, of one key only when `keyId` is given. */
export const spentSince = (state: MemoryState, accountId: string, since: number, keyId?: string | null) =>
  [...state.spend.values()]
    .filter((r) => r.accountId === accountId && r.hour >= since && (keyId === undefined || r.keyId === keyId))
    .reduce((n, r) => n + r.chargedMicroCents - r.refundedMicroCents, 0)
