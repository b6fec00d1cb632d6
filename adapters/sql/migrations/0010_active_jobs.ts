import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/** `activeStatuses` (src/domain/job.ts) in SQL. */
const ACTIVE = "('pending', 'processing')"

/**
 * Each account's active jobs (pending and processing) as a count kept by triggers, so admission
 * reads one number instead of counting the account's jobs under its lock. Triggers rather than
 * the job store's writes keep it exact whatever writes the jobs, processes of the previous release
 * included during a rolling upgrade.
 *
 * SQLite's one writer moves `accounts.active_jobs` both ways. PostgreSQL adds to it on insert, but
 * writes a job's end as a row of `active_job_ends`: a completion of many jobs then locks no
 * account row, so it can neither wait for submits nor deadlock with another completion. The
 * active count is `active_jobs` less the account's rows there; the submit folds them in
 * (SqlJobs.ts).
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const active = sql.literal(ACTIVE)
  yield* sql`ALTER TABLE ${t.accounts} ADD COLUMN active_jobs BIGINT NOT NULL DEFAULT 0`
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE ${t.active_job_ends} (account_id TEXT NOT NULL)`
        yield* sql`CREATE INDEX ${t.active_job_ends_account} ON ${t.active_job_ends} (account_id)`
        // Once per statement, not per row: a bulk insert moving one account's row once per job
        // would make it a chain of row versions to walk on every move.
        yield* sql`CREATE FUNCTION ${t.count_started_job}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            UPDATE ${t.accounts} AS a SET active_jobs = a.active_jobs + started.n
            FROM (SELECT account_id, COUNT(*) AS n FROM started_jobs WHERE status IN ${active} GROUP BY account_id) AS started
            WHERE a.id = started.account_id;
            RETURN NULL;
          END $$`
        yield* sql`CREATE FUNCTION ${t.count_ended_job}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            INSERT INTO ${t.active_job_ends} (account_id) VALUES (OLD.account_id);
            RETURN NULL;
          END $$`
        yield* sql`CREATE TRIGGER ${t.jobs_count_started} AFTER INSERT ON ${t.jobs}
          REFERENCING NEW TABLE AS started_jobs FOR EACH STATEMENT EXECUTE FUNCTION ${t.count_started_job}()`
        yield* sql`CREATE TRIGGER ${t.jobs_count_ended} AFTER UPDATE OF status ON ${t.jobs}
          FOR EACH ROW WHEN (OLD.status IN ${active} AND NEW.status NOT IN ${active}) EXECUTE FUNCTION ${t.count_ended_job}()`
        yield* sql`CREATE TRIGGER ${t.jobs_count_deleted} AFTER DELETE ON ${t.jobs}
          FOR EACH ROW WHEN (OLD.status IN ${active}) EXECUTE FUNCTION ${t.count_ended_job}()`
      }),
    orElse: () =>
      Effect.gen(function*() {
        yield* sql`CREATE TRIGGER ${t.jobs_count_started} AFTER INSERT ON ${t.jobs} WHEN NEW.status IN ${active}
          BEGIN UPDATE ${t.accounts} SET active_jobs = active_jobs + 1 WHERE id = NEW.account_id; END`
        yield* sql`CREATE TRIGGER ${t.jobs_count_ended} AFTER UPDATE OF status ON ${t.jobs}
          WHEN OLD.status IN ${active} AND NEW.status NOT IN ${active}
          BEGIN UPDATE ${t.accounts} SET active_jobs = active_jobs - 1 WHERE id = OLD.account_id; END`
        yield* sql`CREATE TRIGGER ${t.jobs_count_deleted} AFTER DELETE ON ${t.jobs} WHEN OLD.status IN ${active}
          BEGIN UPDATE ${t.accounts} SET active_jobs = active_jobs - 1 WHERE id = OLD.account_id; END`
      })
  })
  // The triggers hold the jobs table from here to the commit, so no job changes between this count and them.
  yield* sql`UPDATE ${t.accounts} SET active_jobs = (
    SELECT COUNT(*) FROM ${t.jobs} WHERE ${t.jobs}.account_id = ${t.accounts}.id AND ${t.jobs}.status IN ${active}
  )`
})
