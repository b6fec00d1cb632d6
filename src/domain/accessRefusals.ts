import { Refusal } from "./refusal.js"

// Who may call: the refusals of authentication (a key or admin token, its state, its address) and of authorisation (a scope, another account's job).

/** No credentials were sent. */
export class Unauthorized extends Refusal<Unauthorized>()("Unauthorized", { code: "UNAUTHORIZED", status: 401 }) {}

/** The credentials sent are not a key (or admin token) this engine knows, or are malformed. */
export class InvalidApiKey extends Refusal<InvalidApiKey>()("InvalidApiKey", { code: "INVALID_API_KEY", status: 401 }) {}

/** The key was deactivated. */
export class ApiKeyInactive extends Refusal<ApiKeyInactive>()("ApiKeyInactive", { code: "API_KEY_INACTIVE", status: 401 }) {}

/** The key is past its expiry. */
export class ApiKeyExpired extends Refusal<ApiKeyExpired>()("ApiKeyExpired", { code: "API_KEY_EXPIRED", status: 401 }) {}

/** The caller's address is not in the key's allow-list. */
export class IpNotWhitelisted extends Refusal<IpNotWhitelisted>()("IpNotWhitelisted", { code: "IP_NOT_WHITELISTED", status: 403 }) {}

/** The key lacks the scope the operation needs. */
export class OperationNotAllowed extends Refusal<OperationNotAllowed>()("OperationNotAllowed", {
  code: "OPERATION_NOT_ALLOWED",
  status: 403
}) {}

/** The job belongs to another account. */
export class UnauthorizedAccess extends Refusal<UnauthorizedAccess>()("UnauthorizedAccess", { code: "UNAUTHORIZED_ACCESS", status: 403 }) {}
