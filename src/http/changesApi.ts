import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { OperationNotAllowed } from "../domain/accessRefusals.js"
import { ServiceUnavailable, ValidationError } from "../domain/errors.js"
import { refusing } from "./errorEnvelope.js"
import { ApiKeyAuth } from "./middleware.js"
import { keySecurity } from "./openApi.js"
import { ChangeListParams, ChangePageView, ChangeStreamHeaders, ChangeStreamParams } from "./schemas/changes.js"

const docs = (summary: string, description: string) => OpenApi.annotations({ summary, description })

/** The changes feed (issue 38): every ending of the account's jobs, paged or streamed. */
export class ChangesGroup extends HttpApiGroup.make("changes")
  .add(
    HttpApiEndpoint.get("list", "/v1/changes", {
      disableCodecs: true,
      query: ChangeListParams.fields,
      success: ChangePageView,
      error: refusing(ValidationError, OperationNotAllowed)
    }).annotateMerge(docs(
      "Read the changes feed",
      "The account's job endings (completed, failed, cancelled) in the order they committed, oldest first " +
        "(scope check_status), kept 7 days by default (CHANGES_RETENTION_DAYS). Follow `nextCursor` as `after`: " +
        "an entry never appears behind a cursor already passed, so a client that stores its cursor sees every " +
        "ending exactly once. While `hasMore` is false the feed is read up; ask again later from `nextCursor`."
    ))
  )
  .add(
    HttpApiEndpoint.get("stream", "/v1/changes/stream", {
      disableCodecs: true,
      query: ChangeStreamParams.fields,
      headers: ChangeStreamHeaders,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })),
      error: refusing(ValidationError, OperationNotAllowed, ServiceUnavailable)
    }).annotateMerge(docs(
      "Follow the changes feed",
      "Server-sent events (scope check_status): one event per ending of any of the account's jobs, its data an " +
        "entry as GET /v1/changes answers it, its id the entry's cursor. `Last-Event-ID` (or `after`) resumes " +
        "after the entry given, catching up first; without either the stream starts at now. The stream stays " +
        "open; a comment line every 15 seconds keeps idle connections open."
    ))
  )
  .middleware(ApiKeyAuth)
  .annotateEndpoints(OpenApi.Override, { security: keySecurity })
  .annotate(OpenApi.Description, "The changes feed: every job ending of the account, to catch up after downtime")
{}
