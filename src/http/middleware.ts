import { Context, type Option } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import type { Caller } from "../services/Auth.js"
import { adminRefusals, anyRequestErrors, refusing, type RefusalClassOf, keyRefusals } from "./errorEnvelope.js"

export class CurrentCaller extends Context.Service<CurrentCaller, Caller>()("genjobs/http/CurrentCaller") {}

/**
 * What each check may answer: what any request may be answered and the store's failures
 * (`anyRequestErrors`), then its own refusals, marked for the OpenAPI document (`refusing`).
 * HttpApi adds a middleware's errors to every endpoint it guards: a handler behind it may fail
 * with these, and with what its own endpoint declares.
 */
const failures = <const Cs extends ReadonlyArray<RefusalClassOf>>(own: Cs) => [...anyRequestErrors, ...refusing(...own)]

/** API key from `Authorization: Bearer` or `x-api-key`; scopes are checked by each operation. */
export class ApiKeyAuth extends HttpApiMiddleware.Service<ApiKeyAuth, { provides: CurrentCaller }>()("genjobs/http/ApiKeyAuth", {
  error: failures(keyRefusals)
}) {}

export class CurrentViewer extends Context.Service<CurrentViewer, Option.Option<Caller>>()("genjobs/http/CurrentViewer") {}

/** The public catalog's optional key: none is anonymous, a present but invalid key is a 401. */
export class OptionalApiKeyAuth extends HttpApiMiddleware.Service<OptionalApiKeyAuth, { provides: CurrentViewer }>()(
  "genjobs/http/OptionalApiKeyAuth",
  { error: failures(keyRefusals) }
) {}

/** Who holds the admin token of this request: the name the audit log records. */
export class CurrentAdmin extends Context.Service<CurrentAdmin, { readonly actor: string }>()("genjobs/http/CurrentAdmin") {}

/** `Authorization: Bearer <admin token>`; the admin API answers 404 when no token is configured. */
export class AdminAuth extends HttpApiMiddleware.Service<AdminAuth, { provides: CurrentAdmin }>()("genjobs/http/AdminAuth", {
  error: failures(adminRefusals)
}) {}
