import { Redacted } from "effect"

/** A credential as options take it: a plain string, or a `Redacted` that keeps it out of logs and traces. */
export type Secret = string | Redacted.Redacted<string>

export const secretValue = (secret: Secret): string => (typeof secret === "string" ? secret : Redacted.value(secret))
