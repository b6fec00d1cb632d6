import { HttpApiBuilder } from "@effect/platform"
import { Effect, JSONSchema } from "effect"
import { CatalogDocument } from "../../domain/catalog.js"
import { Admin } from "../../services/Admin.js"
import { Catalog } from "../../services/Catalog.js"
import { EngineApi } from "../Api.js"
import { toApiFailure } from "../requestContext.js"
import { accountView, apiKeyView } from "../views.js"

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

export const AdminHandlers = HttpApiBuilder.group(EngineApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    const catalog = yield* Catalog
    return handlers
      .handle("replaceCatalog", ({ payload }) =>
        catalog.replace(payload).pipe(
          Effect.map((stored) => ({ revision: stored.revision, models: stored.document.models.length })),
          toApiFailure
        ))
      .handle("exportCatalog", () => catalog.current.pipe(toApiFailure))
      .handle("catalogSchema", () => Effect.succeed(catalogJsonSchema))
      .handle("createAccount", ({ payload }) => admin.createAccount(payload).pipe(Effect.map(accountView), toApiFailure))
      .handle("getAccount", ({ path }) => admin.getAccount(path.id).pipe(Effect.map(accountView), toApiFailure))
      .handle("ledger", ({ path }) =>
        admin.ledger(path.id).pipe(
          Effect.map((entries) => ({ entries })),
          toApiFailure
        ))
      .handle("addCredits", ({ path, payload }) =>
        admin.addCredits(path.id, payload.amountMicroCents).pipe(Effect.map(accountView), toApiFailure))
      .handle("createKey", ({ path, payload }) =>
        admin.createKey(path.id, payload).pipe(
          Effect.map((created) => ({ ...apiKeyView(created.record), key: created.secret })),
          toApiFailure
        ))
      .handle("rotateWebhookSecret", ({ path, payload }) =>
        admin.rotateWebhookSecret(path.id, payload.overlapSeconds).pipe(Effect.map(accountView), toApiFailure))
      .handle("deactivateKey", ({ path }) => admin.deactivateKey(path.id).pipe(Effect.map(apiKeyView), toApiFailure))
  }))
