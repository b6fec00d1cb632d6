import { Effect, JsonSchema, Schema } from "effect"
import { HttpEffect, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { AuditActor } from "../../domain/audit.js"
import { CatalogDocument } from "../../domain/catalog.js"
import { Admin } from "../../services/Admin.js"
import { AdminReads } from "../../services/AdminReads.js"
import { Catalog } from "../../services/Catalog.js"
import { ProviderHealth } from "../../services/ProviderHealth.js"
import { QueueBook } from "../../services/QueueBook.js"
import { accountListItem, adminDeliveryView, adminJobListItem, adminJobView, auditEntryView, providerHealthView } from "../adminViews.js"
import { EngineApi } from "../Api.js"
import { jobLogPageView } from "../logViews.js"
import { CurrentAdmin } from "../middleware.js"
import { CurrentRequestId } from "../requestContext.js"
import { ifMatchRevision, revisionTag } from "../revisionTags.js"
import { accountView, apiKeyView, queueBoardView, spendView, statsView } from "../views.js"

/**
 * The catalog document's JSON Schema, derived from the Schema the import decodes with. Draft-07,
 * as it has always been published: Effect 4 writes 2020-12, which draft-07 validators (ajv's
 * default, most editors) refuse to compile.
 */
const catalogJsonSchema = ((): Record<string, unknown> => {
  // Closed objects, as the import refuses fields it does not know.
  const { definitions, schema } = JsonSchema.toDocumentDraft07(
    Schema.toJsonSchemaDocument(CatalogDocument, { onExcessProperty: "error" })
  )
  return {
    $schema: JsonSchema.META_SCHEMA_URI_DRAFT_07,
    ...schema,
    ...(Object.keys(definitions).length === 0 ? {} : { definitions })
  }
})()

/** The catalog's revision as this answer's ETag, for the client's If-Match. */
const withRevisionTag = (revision: number) =>
  HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "etag", revisionTag(revision)))
  )

/** The audit log's "who": the admin token's name and this request's id. */
const actor: Effect.Effect<AuditActor, never, CurrentAdmin> = Effect.gen(function*() {
  const admin = yield* CurrentAdmin
  return { actor: admin.actor, requestId: yield* CurrentRequestId }
})

export const AdminHandlers = HttpApiBuilder.group(EngineApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    const reads = yield* AdminReads
    const catalog = yield* Catalog
    const health = yield* ProviderHealth
    const book = yield* QueueBook
    return handlers
      .handle("replaceCatalog", ({ headers, payload }) =>
        Effect.gen(function*() {
          const ifRevision = yield* Effect.fromResult(ifMatchRevision(headers["if-match"]))
          const stored = yield* admin.replaceCatalog(payload, yield* actor, ifRevision)
          yield* withRevisionTag(stored.revision)
          return { revision: stored.revision, models: stored.document.models.length }
        }))
      .handle("previewCatalog", ({ payload }) => admin.previewCatalog(payload))
      .handle("exportCatalog", () =>
        Effect.flatMap(catalog.snapshot, (stored) => Effect.as(withRevisionTag(stored.revision), stored.document)))
      .handle("catalogSchema", () => Effect.succeed(catalogJsonSchema))
      .handle("listAccounts", ({ query }) =>
        reads.accounts(query).pipe(
          Effect.map((page) => ({ accounts: page.items.map(accountListItem), nextCursor: page.nextCursor, hasMore: page.hasMore }))))
      .handle("createAccount", ({ payload }) =>
        Effect.flatMap(actor, (by) => admin.createAccount(payload, by)).pipe(Effect.map(accountView)))
      .handle("getAccount", ({ params }) => admin.getAccount(params.id).pipe(Effect.map(accountView)))
      .handle("updateAccount", ({ params, payload }) =>
        Effect.flatMap(actor, (by) => admin.updateAccount(params.id, payload, by)).pipe(Effect.map(accountView)))
      .handle("listKeys", ({ params }) =>
        reads.keys(params.id).pipe(Effect.map((keys) => ({ keys: keys.map(apiKeyView) }))))
      .handle("ledger", ({ params, query }) =>
        reads.ledger(params.id, query).pipe(
          Effect.map((page) => ({ entries: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore }))))
      .handle("addCredits", ({ params, payload }) =>
        Effect.flatMap(actor, (by) => admin.addCredits(params.id, payload.amountMicroCents, by)).pipe(Effect.map(accountView)))
      .handle("createKey", ({ params, payload }) =>
        Effect.flatMap(actor, (by) => admin.createKey(params.id, payload, by)).pipe(
          Effect.map((created) => ({ ...apiKeyView(created.record), key: created.secret }))))
      .handle("rotateWebhookSecret", ({ params, payload }) =>
        Effect.flatMap(actor, (by) => admin.rotateWebhookSecret(params.id, payload.overlapSeconds, by)).pipe(
          Effect.map(accountView)))
      .handle("updateKey", ({ params, payload }) =>
        Effect.flatMap(actor, (by) => admin.updateKey(params.id, payload, by)).pipe(Effect.map(apiKeyView)))
      .handle("spend", ({ query }) => reads.spend(query).pipe(Effect.map(spendView)))
      .handle("stats", ({ query }) => reads.stats(query).pipe(Effect.map(statsView)))
      .handle("queue", () => Effect.map(book.board, queueBoardView))
      .handle("deactivateKey", ({ params }) =>
        Effect.flatMap(actor, (by) => admin.deactivateKey(params.id, by)).pipe(Effect.map(apiKeyView)))
      .handle("listJobs", ({ query }) =>
        reads.jobs(query).pipe(
          Effect.map((page) => ({ jobs: page.items.map(adminJobListItem), nextCursor: page.nextCursor, hasMore: page.hasMore }))))
      .handle("getJob", ({ params }) => reads.job(params.jobId).pipe(Effect.map(adminJobView)))
      .handle("jobLogs", ({ params, query }) => reads.jobLogs(params.jobId, query).pipe(Effect.map(jobLogPageView)))
      .handle("providerHealth", () => Effect.map(health.snapshot, (entries) => ({ providers: entries.map(providerHealthView) })))
      .handle("listDeliveries", ({ query }) =>
        reads.deliveries(query).pipe(
          Effect.map((page) => ({ deliveries: page.items.map(adminDeliveryView), nextCursor: page.nextCursor, hasMore: page.hasMore }))))
      .handle("retryDelivery", ({ params }) =>
        Effect.flatMap(actor, (by) => admin.retryDelivery(params.id, by)).pipe(Effect.map(adminDeliveryView)))
      .handle("auditLog", ({ query }) =>
        reads.auditLog(query).pipe(
          Effect.map((page) => ({ entries: page.items.map(auditEntryView), nextCursor: page.nextCursor, hasMore: page.hasMore }))))
  }))
