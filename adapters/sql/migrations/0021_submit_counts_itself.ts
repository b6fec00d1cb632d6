import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The transaction-local setting naming the one job whose insert its own statement counted: the
 * submit's charge adds it to `accounts.active_jobs` (adapters/sql/jobs/submit.ts) and sets this
 * to the job's id before the row is written. Job ids are unique, so one name serves every table
 * prefix.
 */
export const COUNTED_JOB_SETTING = "genjobs.counted_job"

/**
 * PostgreSQL: the insert trigger of 0010 becomes a row trigger whose WHEN skips the job its
 * statement counted. Measured, the statement trigger was a tenth of a submit's database CPU: a
 * PL/pgSQL call over a transition table, and a second version of the account's row after the
 * charge's own. The WHEN is evaluated without calling the function, so a submit pays nothing for
 * it; every other insert (a hand-off's, a host's, a process of the previous release during a
 * rolling upgrade) is counted by the trigger as before. A row trigger moves the account's row
 * once per job of a multi-row insert, which no engine statement makes.
 * SQLite keeps its row trigger: a submit there is local calls, the trigger's update one of them.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql`DROP TRIGGER ${t.jobs_count_started} ON ${t.jobs}`
        yield* sql`CREATE OR REPLACE FUNCTION ${t.count_started_job}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            UPDATE ${t.accounts} SET active_jobs = active_jobs + 1 WHERE id = NEW.account_id;
            RETURN NULL;
          END $$`
        yield* sql`CREATE TRIGGER ${t.jobs_count_started} AFTER INSERT ON ${t.jobs} FOR EACH ROW
          WHEN (NEW.status IN ('pending', 'processing')
            AND NEW.id IS DISTINCT FROM current_setting(${sql.literal(`'${COUNTED_JOB_SETTING}'`)}, true))
          EXECUTE FUNCTION ${t.count_started_job}()`
      }),
    orElse: () => Effect.void
  })
})
