import { HttpApiMiddleware } from "@effect/platform"
import { Context } from "effect"
import type { Caller } from "../services/Auth.js"
import { ErrorEnvelope } from "./errorEnvelope.js"

export class CurrentCaller extends Context.Tag("genjobs/http/CurrentCaller")<CurrentCaller, Caller>() {}

/** API key from `Authorization: Bearer` or `x-api-key`; scopes are checked by each operation. */
export class ApiKeyAuth extends HttpApiMiddleware.Tag<ApiKeyAuth>()("genjobs/http/ApiKeyAuth", {
  provides: CurrentCaller,
  failure: ErrorEnvelope
}) {}

/** `Authorization: Bearer $ADMIN_TOKEN`; the admin API answers 404 when no token is configured. */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("genjobs/http/AdminAuth", {
  failure: ErrorEnvelope
}) {}
