import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, JSONSchema } from "effect"
import type { AuditActor } from "../../domain/audit.js"
import { CatalogDocument } from "../../domain/catalog.js"
import { Admin } from "../../services/Admin.js"
import { AdminReads } from "../../services/AdminReads.js"
import { Catalog } from "../../services/Catalog.js"
import { ProviderHealth } from "../../services/ProviderHealth.js"
import { accountListItem, adminDeliveryView, adminJobListItem, adminJobView, auditEntryView, providerHealthView } from "../adminViews.js"
import { EngineApi } from "../Api.js"
import { CurrentAdmin } from "../middleware.js"
import { CurrentRequestId } from "../requestContext.js"
import { ifMatchRevision, revisionTag } from "../revisionTags.js"
import { accountView, apiKeyView, spendView, statsView } from "../views.js"

/**
 * Effect marks every "any JSON" spot with the same `$id` ("/schemas/unknown"), which standard
 * validators such as ajv refuse as a duplicate; those ids carry nothing, so they go.
 */
const withoutPlaceholderIds = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(withoutPlaceholderIds)
    : value !== null && typeof value === "object"
    ? Object.fromEntries(
      Object.entries(value)
        .filter(([k, v]) => !(k === "$id" && typeof v === "string" && v.startsWith("/schemas/")))
        .map(([k, v]) => [k, withoutPlaceholderIds(v)])
    )
    : value

/** The catalog document's JSON Schema, derived from the Schema the import decodes with. */
const catalogJsonSchema = withoutPlaceholderIds(JSONSchema.make(CatalogDocument)) as Record<string, unknown>

/** The catalog's revision as this answer's ETag, for the client's If-Match. */
const withRevisionTag = (revision: number) =>
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "etag", revisionTag(revision)))
  )

/** The audit log's "who": the admin token's name and this request's id. */
const actor: Effect.Effect<AuditActor, never, CurrentAdmin> = Effect.zipWith(
  CurrentAdmin,
  FiberRef.get(CurrentRequestId),
  (admin, requestId) => ({ actor: admin.actor, requestId })
)

export const AdminHandlers = HttpApiBuilder.group(EngineApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    const reads = yield* AdminReads
    const catalog = yield* Catalog
    const health = yield* ProviderHealth
    return handlers
      .handle("replaceCatalog", ({ headers, payload }) =>
        Effect.gen(function*() {
          const ifRevision = yield* ifMatchRevision(headers["if-match"])
          const stored = yield* admin.replaceCatalog(payload, yield* actor, ifRevision)
          yield* withRevisionTag(stored.revision)
          return { revision: stored.revision, models: stored.document.models.length }
        }))
      .handle("previewCatalog", ({ payload }) => admin.previewCatalog(payload))
      .handle("exportCatalog", () =>
        Effect.flatMap(catalog.snapshot, (stored) => Effect.as(withRevisionTag(stored.revision), stored.document)))
      .handle("catalogSchema", () => Effect.succeed(catalogJsonSchema))
      .handle("listAccounts", ({ urlParams }) =>
        reads.accounts(urlParams).pipe(
          Effect.map((page) => ({ accounts: page.items.map(accountListItem), nextCursor: page.nextCursor, hasMore: page.hasMore }))))
      .handle("createAccount", ({ payload }) =>
        Effect.flatMap(actor, (by) => admin.createAccount(payload, by)).pipe(Effect.map(accountView)))
      .handle("getAccount", ({ path }) => admin.getAccount(path.id).pipe(Effect.map(accountView)))
      .handle("updateAccount", ({ path, payload }) =>
        Effect.flatMap(actor, (by) => admin.updateAccount(path.id, payload, by)).pipe(Effect.map(accountView)))
      .handle("listKeys", ({ path }) =>
        reads.keys(path.id).pipe(Effect.map((keys) => ({ keys: keys.map(apiKeyView) }))))
      .handle("ledger", ({ path, urlParams }) =>
        reads.ledger(path.id, urlParams).pipe(
          Effect.map((page) => ({ entries: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore }))))
      .handle("addCredits", ({ path, payload }) =>
        Effect.flatMap(actor, (by) => admin.addCredits(path.id, payload.amountMicroCents, by)).pipe(Effect.map(accountView)))
      .handle("createKey", ({ path, payload }) =>
        Effect.flatMap(actor, (by) => admin.createKey(path.id, payload, by)).pipe(
          Effect.map((created) => ({ ...apiKeyView(created.record), key: created.secret }))))
      .handle("rotateWebhookSecret", ({ path, payload }) =>
        Effect.flatMap(actor, (by) => admin.rotateWebhookSecret(path.id, payload.overlapSeconds, by)).pipe(
          Effect.map(accountView)))
      .handle("updateKey", ({ path, payload }) =>
        Effect.flatMap(actor, (by) => admin.updateKey(path.id, payload, by)).pipe(Effect.map(apiKeyView)))
      .handle("spend", ({ urlParams }) => reads.spend(urlParams).pipe(Effect.map(spendView)))
      .handle("stats", ({ urlParams }) => reads.stats(urlParams).pipe(Effect.map(statsView)))
      .handle("deactivateKey", ({ path }) =>
        Effect.flatMap(actor, (by) => admin.deactivateKey(path.id, by)).pipe(Effect.map(apiKeyView)))
      .handle("listJobs", ({ urlParams }) =>
        reads.jobs(urlParams).pipe(
          Effect.map((page) => ({ jobs: page.items.map(adminJobListItem), nextCursor: page.nextCursor, hasMore: page.hasMore }))))
      .handle("getJob", ({ path }) => reads.job(path.jobId).pipe(Effect.map(adminJobView)))
      .handle("providerHealth", () => Effect.map(health.snapshot, (entries) => ({ providers: entries.map(providerHealthView) })))
      .handle("listDeliveries", ({ urlParams }) =>
        reads.deliveries(urlParams).pipe(
          Effect.map((page) => ({ deliveries: page.items.map(adminDeliveryView), nextCursor: page.nextCursor, hasMore: page.hasMore }))))
      .handle("retryDelivery", ({ path }) =>
        Effect.flatMap(actor, (by) => admin.retryDelivery(path.id, by)).pipe(Effect.map(adminDeliveryView)))
      .handle("auditLog", ({ urlParams }) =>
        reads.auditLog(urlParams).pipe(
          Effect.map((page) => ({ entries: page.items.map(auditEntryView), nextCursor: page.nextCursor, hasMore: page.hasMore }))))
  }))
