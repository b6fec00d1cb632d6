import { Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { Tables } from "../tables.js"

/** The error a gated submit raises when it admits nothing: its statement rolls back whole. */
export const SUBMIT_DECLINED_SQLSTATE = "GJ001"

/** The functions' names under the engine's table prefix. */
export const submitGateName = (prefix: string) => `${prefix}submit_gate`
export const submitDeclinedName = (prefix: string) => `${prefix}submit_declined`

/** The gate's spend block, given the statement that declines the submit. */
export type SpendCheck = (sql: SqlClient.SqlClient, t: Tables, raise: Statement.Fragment) => Statement.Fragment

/**
 * The gate's spend block as 0016 wrote it: the period's hourly rollups summed. 0025 replaces it
 * with a read of the daily totals, the rest of the function unchanged.
 */
const hourlySpendCheck: SpendCheck = (sql, t, raise) =>
  sql`IF p_account_since IS NOT NULL OR p_key_since IS NOT NULL THEN
              SELECT
                COALESCE(SUM(CASE WHEN hour >= p_account_since THEN charged_micro_cents - refunded_micro_cents ELSE 0 END), 0),
                COALESCE(SUM(CASE WHEN key_id = p_key_id AND hour >= p_key_since THEN charged_micro_cents - refunded_micro_cents ELSE 0 END), 0)
              INTO account_spent, key_spent
              FROM ${t.spend_hourly} WHERE account_id = p_account_id AND hour >= LEAST(p_account_since, p_key_since);
              IF p_account_since IS NOT NULL AND account_spent > p_account_most THEN ${raise}; END IF;
              IF p_key_since IS NOT NULL AND key_spent > p_key_most THEN ${raise}; END IF;
            END IF;`

/**
 * PostgreSQL: the gate of a submit with an idempotency key, rate limits or budgets, called by
 * that submit's one statement (adapters/sql/jobs/submit.ts). A function because each statement
 * in it reads a fresh snapshot: the windows and the spend are read after the account's lock is
 * taken, so they see every submit of the account committed while this one waited, as the
 * transaction's reads do. It compares with the bounds src/ computed (submitGates) and decides
 * no refusal: short of a bound it raises SUBMIT_DECLINED_SQLSTATE, the statement (the key's
 * claim with it) rolls back and the transaction decides why. A later change drops or replaces
 * these functions by name in a migration of its own (CREATE OR REPLACE keeps the signature).
 *
 * Created or replaced with `spendCheck` as the gate's spend block: 0016's hourly read, or 0025's
 * daily one.
 */
export const createSubmitGate = (sql: SqlClient.SqlClient, t: Tables, spendCheck: SpendCheck) =>
  Effect.gen(function*() {
    const declined = sql(submitDeclinedName(t.prefix))
    const raise = sql.literal(`RAISE EXCEPTION USING ERRCODE = '${SUBMIT_DECLINED_SQLSTATE}', MESSAGE = 'submit declined by its gate'`)
    /** The gate's parameter `p_<window>_<name>`. */
    const param = (window: "minute" | "day", name: "ms" | "bucket" | "most") => sql.literal(`p_${window}_${name}`)
    /** Declines when the rate window already counts more than its bound. */
    const windowCheck = (window: "minute" | "day") =>
      sql`IF ${param(window, "ms")} IS NOT NULL THEN
          SELECT COALESCE(SUM(n), 0) INTO counted FROM ${t.rate_windows}
            WHERE account_id = p_account_id AND model = p_model AND version = p_version
              AND window_ms = ${param(window, "ms")} AND oldest > p_now - ${param(window, "ms")};
          IF counted > ${param(window, "most")} THEN ${raise}; END IF;
        END IF;`
    /** Counts the admitted submit in its bucket of the rate window. */
    const windowCount = (window: "minute" | "day") =>
      sql`IF ${param(window, "ms")} IS NOT NULL THEN
          INSERT INTO ${t.rate_windows} AS r (account_id, model, version, window_ms, bucket, n, oldest)
            VALUES (p_account_id, p_model, p_version, ${param(window, "ms")}, ${param(window, "bucket")}, 1, p_now)
            ON CONFLICT (account_id, model, version, window_ms, bucket) DO UPDATE SET n = r.n + 1, oldest = LEAST(r.oldest, excluded.oldest);
        END IF;`
    yield* sql`CREATE OR REPLACE FUNCTION ${declined}() RETURNS boolean LANGUAGE plpgsql AS $$
      BEGIN
        ${raise};
      END $$`
    yield* sql`CREATE OR REPLACE FUNCTION ${sql(submitGateName(t.prefix))}(
        p_account_id text, p_key_id text, p_model text, p_version text, p_now bigint, p_job_id text,
        p_idempotency_key text, p_request_hash text, p_not_before bigint,
        p_minute_ms bigint, p_minute_bucket bigint, p_minute_most bigint,
        p_day_ms bigint, p_day_bucket bigint, p_day_most bigint,
        p_account_since bigint, p_account_most bigint, p_key_since bigint, p_key_most bigint
      ) RETURNS TABLE (gate_admitted boolean, gate_request_hash text, gate_job_id text, gate_created_at bigint)
      -- One row, always: the planner's default guess (1,000) joins the caller's tables by scanning them.
      LANGUAGE plpgsql ROWS 1 AS $$
      DECLARE
        claimed text;
        counted bigint;
        account_spent bigint;
        key_spent bigint;
      BEGIN
        IF p_idempotency_key IS NOT NULL THEN
          -- A parallel claim of the key waits here for its statement or transaction to end.
          INSERT INTO ${t.idempotency_keys} AS i (account_id, idempotency_key, request_hash, job_id, created_at)
            VALUES (p_account_id, p_idempotency_key, p_request_hash, p_job_id, p_now)
            ON CONFLICT (account_id, idempotency_key) DO UPDATE SET
              request_hash = excluded.request_hash, job_id = excluded.job_id, created_at = excluded.created_at
            WHERE i.created_at < p_not_before
            RETURNING i.job_id INTO claimed;
          IF claimed IS NULL THEN
            RETURN QUERY SELECT false, i.request_hash, i.job_id, i.created_at FROM ${t.idempotency_keys} i
              WHERE i.account_id = p_account_id AND i.idempotency_key = p_idempotency_key;
            RETURN;
          END IF;
        END IF;
        -- The lock every charge of the account takes: what follows sees each submit admitted before.
        PERFORM 1 FROM ${t.accounts} WHERE id = p_account_id FOR UPDATE;
        IF NOT FOUND THEN ${raise}; END IF;
        ${windowCheck("minute")}
        ${windowCheck("day")}
        ${spendCheck(sql, t, raise)}
        ${windowCount("minute")}
        ${windowCount("day")}
        RETURN QUERY SELECT true, NULL::text, NULL::text, NULL::bigint;
      END $$`
  })

export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () => createSubmitGate(sql, t, hourlySpendCheck),
    orElse: () => Effect.void
  })
})
