/**
 * The audit log's actions, for its filter. The browser cannot import the domain's TypeScript, so
 * this is a copy of `AuditAction` (src/domain/audit.ts); test/unit/dashboardAuditActions.test.ts
 * keeps the two equal.
 */
export const AUDIT_ACTIONS = [
  "account.create",
  "account.update",
  "account.credit",
  "account.webhook_secret.rotate",
  "key.create",
  "key.update",
  "key.deactivate",
  "catalog.replace",
  "delivery.retry"
]
