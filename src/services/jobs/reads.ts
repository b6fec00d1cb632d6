import { Effect, Option } from "effect"
import type { StoreError, ValidationError } from "../../domain/errors.js"
import { type OperationNotAllowed, UnauthorizedAccess } from "../../domain/accessRefusals.js"
import type { JobId } from "../../domain/ids.js"
import { type Job, JobNotFound, JobStatus as JobStatusSchema } from "../../domain/job.js"
import { type Caller, requireScope } from "../Auth.js"
import { readPageRequest, toPage } from "../paging.js"
import type { JobsDeps } from "./deps.js"

export interface ListRequest {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
  readonly status?: string | undefined
  readonly modelId?: string | undefined
}

export interface JobPage {
  readonly jobs: ReadonlyArray<Job>
  readonly nextCursor: string | null
  readonly hasMore: boolean
}

/** What `get` needs of the store: a read of one job (the repo's, or the watchers' batched one, refused `E` beyond its cap). */
interface JobReader<E> {
  readonly repo: { readonly get: (id: JobId) => Effect.Effect<Option.Option<Job>, E | StoreError> }
}

/** The caller's job; another account's is refused as such, not hidden. */
const ownJob = <E>({ repo }: JobReader<E>, caller: Caller, id: string): Effect.Effect<Job, E | JobNotFound | UnauthorizedAccess | StoreError> =>
  Effect.gen(function*() {
    const job = yield* repo.get(id as JobId)
    if (Option.isNone(job)) return yield* Effect.fail(new JobNotFound({ message: `No job "${id}"`, details: { jobId: id } }))
    if (job.value.accountId !== caller.account.id) {
      return yield* Effect.fail(
        new UnauthorizedAccess({ message: "This API key has no access to the job", details: { jobId: id } })
      )
    }
    return job.value
  })

/** Also over another read of one job: the watchers' batched read (JobFollow.readForWatch). */
export const get = <E = never>(deps: JobReader<E>) => (caller: Caller, id: string) =>
  requireScope(caller, "check_status").pipe(Effect.andThen(ownJob(deps, caller, id)))

export const list = ({ repo }: Pick<JobsDeps, "repo">) =>
(caller: Caller, request: ListRequest): Effect.Effect<JobPage, OperationNotAllowed | ValidationError | StoreError> =>
  Effect.gen(function*() {
    yield* requireScope(caller, "check_status")
    const { after, limit, status } = yield* readPageRequest(request, JobStatusSchema.literals)
    const rows = yield* repo.list({
      accountId: caller.account.id,
      limit,
      ...(status === undefined ? {} : { status }),
      ...(request.modelId === undefined ? {} : { model: request.modelId }),
      ...(after === undefined ? {} : { after })
    })
    const page = toPage(rows, limit)
    return { jobs: page.items, hasMore: page.hasMore, nextCursor: page.nextCursor }
  })
