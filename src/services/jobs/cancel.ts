import { Clock, Effect } from "effect"
import type { JobId } from "../../domain/ids.js"
import { type Caller, requireScope } from "../Auth.js"
import type { JobsDeps } from "./deps.js"

/** Cancels the caller's pending job and refunds it; the store decides, under the job's lock, whether it still can. */
export const cancel = ({ repo }: Pick<JobsDeps, "repo">) => (caller: Caller, id: string) =>
  Effect.gen(function*() {
    yield* requireScope(caller, "submit_job")
    return yield* repo.cancel(id as JobId, caller.account.id, yield* Clock.currentTimeMillis)
  })
