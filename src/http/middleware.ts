import { HttpApiMiddleware } from "@effect/platform"
import { Context, type Option } from "effect"
import type { Caller } from "../services/Auth.js"
import { ApiErrors } from "./errorEnvelope.js"

export class CurrentCaller extends Context.Tag("genjobs/http/CurrentCaller")<CurrentCaller, Caller>() {}

/** API key from `Authorization: Bearer` or `x-api-key`; scopes are checked by each operation. */
export class ApiKeyAuth extends HttpApiMiddleware.Tag<ApiKeyAuth>()("genjobs/http/ApiKeyAuth", {
  provides: CurrentCaller,
  failure: ApiErrors
}) {}

export class CurrentViewer extends Context.Tag("genjobs/http/CurrentViewer")<CurrentViewer, Option.Option<Caller>>() {}

/** The public catalog's optional key: none is anonymous, a present but invalid key is a 401. */
export class OptionalApiKeyAuth extends HttpApiMiddleware.Tag<OptionalApiKeyAuth>()("genjobs/http/OptionalApiKeyAuth", {
  provides: CurrentViewer,
  failure: ApiErrors
}) {}

/** Who holds the admin token of this request: the name the audit log records. */
export class CurrentAdmin extends Context.Tag("genjobs/http/CurrentAdmin")<CurrentAdmin, { readonly actor: string }>() {}

/** `Authorization: Bearer <admin token>`; the admin API answers 404 when no token is configured. */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("genjobs/http/AdminAuth", {
  provides: CurrentAdmin,
  failure: ApiErrors
}) {}
