import { Effect } from "effect"
import { createHash } from "node:crypto"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import { type ProviderCredential, ProviderRejected } from "../../src/ports/Provider.js"

/** One credential as an adapter's option takes it: the secret alone, or with an id and a weight. */
export type CredentialOption = Secret | { readonly id?: string | undefined; readonly secret: Secret; readonly weight?: number | undefined }

/**
 * An adapter's credential option: one secret, several separated by commas (as an environment
 * variable gives them: `REPLICATE_API_TOKEN=tok1,tok2`), or a list of secrets or of
 * `{ id?, secret, weight? }`.
 */
export type CredentialsOption = CredentialOption | ReadonlyArray<CredentialOption>

/** A provider's credentials: what the engine may see of them, and the secret for a request's credential. */
export interface CredentialSet {
  /** Ids and weights, never the secrets; undefined with a single credential (the engine then has no choice to make). */
  readonly credentials: ReadonlyArray<ProviderCredential> | undefined
  /** Every secret, for redaction. */
  readonly secrets: ReadonlyArray<string>
  /**
   * The secret of the credential a request names (the first when it names none). An id that is
   * no longer configured is refused, never swapped for another: the generation belongs to the
   * account of the credential that started it.
   */
  readonly secretFor: (credentialId: string | undefined) => Effect.Effect<string, ProviderRejected>
}

/** A credential's default id: a short digest of its secret, which tells credentials apart and gives nothing of the secret away. */
export const credentialIdOf = (secret: string): string => `key-${createHash("sha256").update(secret).digest("hex").slice(0, 8)}`

/** Throws on a configuration that cannot work (no secret, an empty one, a repeated id, a weight that is not positive). */
export const credentialSet = (providerName: string, option: CredentialsOption): CredentialSet => {
  const given = Array.isArray(option) ? option as ReadonlyArray<CredentialOption> : [option as CredentialOption]
  const list = given.flatMap((entry) => {
    if (typeof entry === "object" && "secret" in entry) {
      return [{ id: entry.id, secret: secretValue(entry.secret).trim(), weight: entry.weight ?? 1 }]
    }
    return secretValue(entry).split(",").map((secret) => ({ id: undefined, secret: secret.trim(), weight: 1 }))
  }).filter((entry) => entry.secret !== "" || entry.id !== undefined)
  if (list.length === 0) throw new Error(`${providerName}: no credential given`)
  const entries = list.map((entry) => {
    if (entry.secret === "") throw new Error(`${providerName}: the credential "${entry.id}" has an empty secret`)
    if (!(entry.weight > 0) || !Number.isFinite(entry.weight)) throw new Error(`${providerName}: a credential's weight must be a positive number`)
    return { id: entry.id ?? credentialIdOf(entry.secret), secret: entry.secret, weight: entry.weight }
  })
  const ids = new Set(entries.map((entry) => entry.id))
  if (ids.size !== entries.length) throw new Error(`${providerName}: two credentials have the same id (or the same secret)`)
  const byId = new Map(entries.map((entry) => [entry.id, entry.secret]))
  return {
    credentials: entries.length === 1 ? undefined : entries.map(({ id, weight }) => ({ id, weight })),
    secrets: entries.map((entry) => entry.secret),
    secretFor: (credentialId) => {
      const secret = credentialId === undefined ? entries[0]!.secret : byId.get(credentialId)
      return secret !== undefined
        ? Effect.succeed(secret)
        : Effect.fail(new ProviderRejected({
          message: `The ${providerName} credential "${credentialId}" this job was started with is no longer configured`,
          retryable: false
        }))
    }
  }
}
