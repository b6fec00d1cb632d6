import { Data, Effect } from "effect"

/**
 * The engine shares its host's database and brokers, so every name it creates there (tables,
 * indexes, PostgreSQL's derived constraint names, the NOTIFY channel, a Redis stream, a NATS
 * stream and consumer) starts with a prefix.
 */
export const DEFAULT_TABLE_PREFIX = "genjobs_"

/**
 * The longest name PostgreSQL derives from a table name here (PostgreSQL 18 names NOT NULL
 * constraints `<table>_<column>_not_null`); with the prefix it must fit PostgreSQL's 63
 * characters, or PostgreSQL would truncate it and the names would no longer be predictable.
 */
const LONGEST_DERIVED_NAME = "webhook_deliveries_account_id_not_null"
export const MAX_TABLE_PREFIX_LENGTH = 63 - LONGEST_DERIVED_NAME.length

export class TablePrefixError extends Data.TaggedError("TablePrefixError")<{ readonly message: string }> {}

/**
 * Lower case only, so the names read the same quoted or unquoted in a host's own SQL. Never
 * empty: the unprefixed names are the ones that collide.
 */
export const checkTablePrefix = (prefix: string): Effect.Effect<string, TablePrefixError> =>
  /^[a-z_][a-z0-9_]*$/.test(prefix) && prefix.length <= MAX_TABLE_PREFIX_LENGTH
    ? Effect.succeed(prefix)
    : Effect.fail(
      new TablePrefixError({
        message: `Invalid table prefix ${JSON.stringify(prefix)}: use 1 to ${MAX_TABLE_PREFIX_LENGTH} characters ` +
          "from a-z, 0-9 and _, not starting with a digit"
      })
    )
