import { Result } from "effect"

/** An admin token and the name the audit log records for whoever uses it. */
export interface NamedAdminToken {
  readonly name: string
  readonly token: string
}

/** The name ADMIN_TOKEN's holder is recorded under. */
export const DEFAULT_ADMIN_NAME = "admin"

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/

/**
 * `ADMIN_TOKENS`: `name:token` pairs separated by commas (`alice:tok1,bob:tok2`); a token may
 * hold `:` but not `,`. Names and tokens must be unique, so every token names one actor.
 */
export const parseAdminTokens = (text: string): Result.Result<ReadonlyArray<NamedAdminToken>, string> => {
  const entries = text.split(",").map((e) => e.trim()).filter((e) => e !== "")
  const parsed: Array<NamedAdminToken> = []
  for (const entry of entries) {
    const colon = entry.indexOf(":")
    const name = colon < 0 ? entry : entry.slice(0, colon)
    const token = colon < 0 ? "" : entry.slice(colon + 1)
    if (!NAME.test(name)) {
      return Result.fail(`ADMIN_TOKENS: "${name}" is not a name (letters, digits, _ . @ -, up to 64, starting with a letter or digit)`)
    }
    if (token === "") return Result.fail(`ADMIN_TOKENS: the entry of "${name}" has no token (write name:token)`)
    if (parsed.some((p) => p.name === name)) return Result.fail(`ADMIN_TOKENS: "${name}" appears twice`)
    if (parsed.some((p) => p.token === token)) return Result.fail(`ADMIN_TOKENS: "${name}" has the same token as another name`)
    parsed.push({ name, token })
  }
  return entries.length === 0 ? Result.fail("ADMIN_TOKENS is set but holds no name:token pair") : Result.succeed(parsed)
}
