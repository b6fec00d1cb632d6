import { Effect } from "effect"
import type { Account } from "../../src/domain/account.js"
import { emptyCatalog } from "../../src/domain/catalog.js"
import { type AccountId, type JobId, newAccountId, newJobId, type RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { Schema } from "effect"
import { CatalogDocument } from "../../src/domain/catalog.js"

export const T0 = 1_700_000_000_000
export const NO_LIMITS = { requestsPerMinute: 0, requestsPerDay: 0 }

export const account = (overrides: Partial<Account> = {}): Account => ({
  id: newAccountId(),
  name: "acct",
  balanceMicroCents: 0,
  maxConcurrentJobs: 100,
  segments: [],
  allowedModels: [],
  discounts: [],
  webhookSecret: "whsec_test",
  previousWebhookSecret: null,
  previousWebhookSecretExpiresAt: null,
  standardWebhooks: false,
  createdAt: T0,
  ...overrides
})

export const createAccount = (credit: number, overrides: Partial<Account> = {}) =>
  Effect.flatMap(AccountRepo, (repo) => repo.create(account(overrides), credit))

let sequence = 0
export const job = (accountId: AccountId, overrides: Partial<Job> = {}): Job => ({
  id: newJobId(overrides.createdAt ?? T0),
  accountId,
  requestId: `req_${++sequence}` as RequestId,
  model: "demo/text",
  version: "v1",
  input: { prompt: "hi", nested: { list: [1, 2, { deep: true }] } },
  webhookUrl: null,
  status: "pending",
  costMicroCents: 1_000,
  error: null,
  outputs: null,
  createdAt: T0,
  estimatedCompletionAt: T0 + 30_000,
  startedAt: null,
  completedAt: null,
  attempts: 0,
  leaseOwner: null,
  leaseExpiresAt: null,
  providerPhase: null,
  providerHandle: null,
  providerStarts: 0,
  providerRoute: null,
  fairKey: 0,
  ...overrides
})

export const jobId = (id: string) => id as JobId

export const sampleCatalog = () => Schema.decodeUnknownSync(CatalogDocument)(demoCatalog())
export { emptyCatalog }
