import * as Data from "effect/Data"

/**
 * Why a command failed: the API's error code when the server answered with one, else a code
 * of the CLI's own (CONNECTION_FAILED, ADMIN_TOKEN_MISSING, CONFIRMATION_REQUIRED, ...).
 */
export class CliError extends Data.TaggedError("CliError")<{
  readonly code: string
  readonly message: string
  readonly status?: number | undefined
  readonly requestId?: string | undefined
  readonly details?: unknown
}> {}
