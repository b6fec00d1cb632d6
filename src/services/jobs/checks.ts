import { Effect } from "effect"
import { ValidationError } from "../../domain/errors.js"
import { InvalidInput } from "../../domain/admission.js"
import { parseWebhookUrl } from "../../domain/webhookUrl.js"
import type { SubmitCommand } from "../../ports/JobRepo.js"
import type { Caller } from "../Auth.js"

export { MAX_WEBHOOK_URL_LENGTH } from "../../domain/webhookUrl.js"

// The checks a submit's request must pass before anything is priced or stored.

const MAX_IDEMPOTENCY_KEY_LENGTH = 255

export const requireModel = (model: string): Effect.Effect<void, ValidationError> =>
  model.trim() === ""
    ? Effect.fail(new ValidationError({ message: "model is required: the model's slug", details: { field: "model" } }))
    : Effect.void

export const checkIdempotencyKey = (key: string | undefined): Effect.Effect<void, ValidationError> =>
  key !== undefined && (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    ? Effect.fail(new ValidationError({ message: `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters` }))
    : Effect.void

/** The URL a job's webhook goes to, as parsed: what is stored and called. */
export const checkWebhookUrl = (url: string | undefined): Effect.Effect<string | undefined, InvalidInput> => {
  if (url === undefined) return Effect.succeed(undefined)
  const checked = parseWebhookUrl(url)
  return checked._tag === "Valid"
    ? Effect.succeed(checked.href)
    : Effect.fail(new InvalidInput({ message: `webhookUrl ${checked.reason}`, details: { field: "webhookUrl" } }))
}

/** The budgets a caller's submits are held to: the key's, then its account's. */
export const budgetsOf = ({ account, key }: Caller): NonNullable<SubmitCommand["budgets"]> => [
  ...(key.budget == null ? [] : [{ scope: "key" as const, budget: key.budget }]),
  ...(account.budget == null ? [] : [{ scope: "account" as const, budget: account.budget }])
]
