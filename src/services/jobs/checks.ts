import { Effect } from "effect"
import { engineError, type EngineError } from "../../domain/errors.js"
import type { SubmitCommand } from "../../ports/JobRepo.js"
import type { Caller } from "../Auth.js"

// The checks a submit's request must pass before anything is priced or stored.

const MAX_IDEMPOTENCY_KEY_LENGTH = 255

/** Longer URLs are refused: receivers and proxies commonly stop at 2,048 characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2_048

export const requireModel = (model: string): Effect.Effect<void, EngineError> =>
  model.trim() === ""
    ? Effect.fail(engineError("VALIDATION_ERROR", "model is required: the model's slug", { field: "model" }))
    : Effect.void

export const checkIdempotencyKey = (key: string | undefined): Effect.Effect<void, EngineError> =>
  key !== undefined && (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    ? Effect.fail(engineError("VALIDATION_ERROR", `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`))
    : Effect.void

export const checkWebhookUrl = (url: string | undefined): Effect.Effect<void, EngineError> => {
  if (url === undefined) return Effect.void
  const invalid = (reason: string) =>
    Effect.fail(engineError("INVALID_INPUT", `webhookUrl ${reason}`, { field: "webhookUrl" }))
  if (url.length > MAX_WEBHOOK_URL_LENGTH) return invalid(`must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`)
  if (!URL.canParse(url)) return invalid("is not a valid URL")
  const parsed = new URL(url)
  if (parsed.protocol !== "https:") return invalid("must use the https:// scheme")
  if (parsed.username !== "" || parsed.password !== "") return invalid("must not carry credentials")
  return Effect.void
}

/** The budgets a caller's submits are held to: the key's, then its account's. */
export const budgetsOf = ({ account, key }: Caller): NonNullable<SubmitCommand["budgets"]> => [
  ...(key.budget == null ? [] : [{ scope: "key" as const, budget: key.budget }]),
  ...(account.budget == null ? [] : [{ scope: "account" as const, budget: account.budget }])
]
