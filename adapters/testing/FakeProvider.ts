import { Deferred, Effect, Exit } from "effect"
import type { ProviderFacts } from "../../src/domain/failureTaxonomy.js"
import {
  type GenerationProvider,
  type ProviderOutput,
  ProviderRejected,
  type ProviderRequest,
  type ProviderStatus,
  ProviderUnreachable,
  type Recovered
} from "../../src/ports/Provider.js"
import { defaultOutputs } from "./outputs.js"

/** How one job ends. No outputs means the model's default outputs. */
type Ending =
  | { readonly _tag: "Succeed"; readonly outputs: ReadonlyArray<ProviderOutput> }
  | { readonly _tag: "Fail"; readonly message: string; readonly facts?: ProviderFacts | undefined }

type Behaviour = Ending | { readonly _tag: "Hang"; readonly hang: HangControl }

interface HangControl {
  readonly gate: Deferred.Deferred<Ending>
  readonly reach: (request: ProviderRequest) => void
}

/** A provider error scripted for the next call. */
type Fault =
  | { readonly _tag: "Reject"; readonly httpStatus: number; readonly retryAfterMs: number | undefined; readonly message: string }
  | { readonly _tag: "Unreachable"; readonly started: boolean }

/** A job held in `processing` until the test lets it go. */
export interface Hang {
  /** Resolves when a job's generation starts: it is then processing, with its lease held. */
  readonly reached: Promise<ProviderRequest>
  /** Lets the job complete, with these outputs or the model's default ones. */
  readonly release: (...outputs: ReadonlyArray<ProviderOutput>) => void
  /** Lets the job fail with GENERATION_FAILED and this message. */
  readonly fail: (message: string) => void
}

/** Which jobs a rule applies to: a model slug and/or input fields that must be equal. */
export type JobMatch =
  | { readonly model?: string; readonly input?: Readonly<Record<string, unknown>> }
  | ((request: ProviderRequest) => boolean)

export interface FakeProvider {
  /** The GenerationProvider to register under the catalog's provider id. */
  readonly provider: GenerationProvider
  /** Every start the provider was asked for, oldest first, the rejected ones included. */
  readonly calls: ReadonlyArray<ProviderRequest>
  /** Generations started (accepted starts): a job resumed by another worker still counts once. */
  readonly starts: number
  /** Polls received. */
  readonly polls: number
  /** Cancels received (a deadline passed). */
  readonly cancels: number
  /** The next job completes with these outputs (none: the model's default ones). Queued in order. */
  readonly succeedNext: (...outputs: ReadonlyArray<ProviderOutput>) => void
  /**
   * The next job fails with GENERATION_FAILED and this message, the provider reporting `facts`
   * (its error code, a content flag, ...) from which the engine decides the failure's type.
   * Queued in order.
   */
  readonly failNext: (message?: string, facts?: ProviderFacts) => void
  /** The next job hangs until the handle is released. Queued in order. */
  readonly hangNext: () => Hang
  /**
   * The next provider call (a start or a poll) answers with this HTTP status: 408, 429 and 5xx
   * are transient (the engine retries, never sooner than `retryAfterMs`), others fail the job.
   * Queued in order, before the job behaviours.
   */
  readonly rejectNext: (httpStatus?: number, retryAfterMs?: number) => void
  /**
   * The next provider call gets no answer. For a start, `started: true` means the provider did
   * start the generation (the answer was lost): the engine then finds it through `recover`.
   */
  readonly unreachableNext: (options?: { readonly started?: boolean }) => void
  /** Every job that matches (and has nothing queued for it) ends this way. First matching rule wins. */
  readonly when: (match: JobMatch) => {
    readonly succeed: (...outputs: ReadonlyArray<ProviderOutput>) => void
    readonly fail: (message: string) => void
  }
  /** Forgets the queues, the rules, the calls and the counts. */
  readonly reset: () => void
}

const matches = (match: JobMatch, request: ProviderRequest): boolean => {
  if (typeof match === "function") return match(request)
  if (match.model !== undefined && match.model !== request.model.slug) return false
  return Object.entries(match.input ?? {}).every(([field, value]) => request.job.input[field] === value)
}

const statusOf = (ending: Ending, request: ProviderRequest): ProviderStatus =>
  ending._tag === "Fail"
    ? { _tag: "Failed", message: ending.message, ...ending.facts }
    : { _tag: "Succeeded", outputs: ending.outputs.length > 0 ? ending.outputs : defaultOutputs(request.model) }

const succeed = (outputs: ReadonlyArray<ProviderOutput>): Ending => ({ _tag: "Succeed", outputs })
const fail = (message: string, facts?: ProviderFacts): Ending => ({ _tag: "Fail", message, facts })

const failure = (fault: Fault) =>
  fault._tag === "Unreachable"
    ? new ProviderUnreachable({ message: "the fake provider did not answer" })
    : new ProviderRejected({
      message: fault.message,
      retryable: fault.httpStatus === 408 || fault.httpStatus === 429 || fault.httpStatus >= 500,
      httpStatus: fault.httpStatus,
      ...(fault.retryAfterMs === undefined ? {} : { retryAfterMs: fault.retryAfterMs })
    })

/**
 * A provider the test scripts, with the start/poll shape of a remote one: `start` answers a
 * handle, `poll` the job's ending (a hang waits for its release). Scripted provider errors come
 * first, then queued behaviours for the next jobs, then rules by model or input, then a small
 * valid file of the model's category. Scripting is synchronous, so the same API serves Promise
 * tests and Effect tests.
 */
export const makeFakeProvider = (): FakeProvider => {
  const queue: Array<Behaviour> = []
  const faults: Array<Fault> = []
  const rules: Array<{ readonly match: JobMatch; readonly ending: Ending }> = []
  const calls: Array<ProviderRequest> = []
  const generations = new Map<string, Behaviour>()
  const byKey = new Map<string, string>()
  let starts = 0
  let polls = 0
  let cancels = 0

  const provider: GenerationProvider = {
    start: (request) =>
      Effect.suspend(() => {
        calls.push(request)
        const fault = faults.shift()
        if (fault !== undefined && !(fault._tag === "Unreachable" && fault.started)) return Effect.fail(failure(fault))
        const behaviour = queue.shift() ?? rules.find((rule) => matches(rule.match, request))?.ending ?? succeed([])
        const id = `fake_${++starts}`
        generations.set(id, behaviour)
        byKey.set(request.idempotencyKey, id)
        if (behaviour._tag === "Hang") behaviour.hang.reach(request)
        return fault === undefined ? Effect.succeed({ _tag: "Started", handle: { id } } as const) : Effect.fail(failure(fault))
      }),
    poll: (handle, request) =>
      Effect.suspend(() => {
        polls++
        const fault = faults.shift()
        if (fault !== undefined) return Effect.fail(failure(fault))
        const behaviour = generations.get(handle.id)
        if (behaviour === undefined) {
          return Effect.fail(new ProviderRejected({ message: `no generation ${handle.id}`, retryable: false, httpStatus: 404 }))
        }
        return behaviour._tag === "Hang"
          ? Effect.map(Deferred.await(behaviour.hang.gate), (ending) => statusOf(ending, request))
          : Effect.succeed(statusOf(behaviour, request))
      }),
    cancel: () => Effect.sync(() => void cancels++),
    // Not found is Unknown, as for a provider that cannot list everything: a lost start fails its job.
    recover: (request) =>
      Effect.sync((): Recovered => {
        const id = byKey.get(request.idempotencyKey)
        return id === undefined ? { _tag: "Unknown" } : { _tag: "Found", handle: { id } }
      })
  }

  const hangNext = (): Hang => {
    const gate = Deferred.makeUnsafe<Ending>()
    let reach: (request: ProviderRequest) => void = () => {}
    const reached = new Promise<ProviderRequest>((resolve) => (reach = resolve))
    queue.push({ _tag: "Hang", hang: { gate, reach } })
    return {
      reached,
      release: (...outputs) => void Deferred.doneUnsafe(gate, Exit.succeed(succeed(outputs))),
      fail: (message) => void Deferred.doneUnsafe(gate, Exit.succeed(fail(message)))
    }
  }

  return {
    provider,
    calls,
    get starts() {
      return starts
    },
    get polls() {
      return polls
    },
    get cancels() {
      return cancels
    },
    succeedNext: (...outputs) => void queue.push(succeed(outputs)),
    failNext: (message = "the fake provider failed as scripted", facts) => void queue.push(fail(message, facts)),
    hangNext,
    rejectNext: (httpStatus = 429, retryAfterMs) =>
      void faults.push({ _tag: "Reject", httpStatus, retryAfterMs, message: `the fake provider answered ${httpStatus}` }),
    unreachableNext: (options = {}) => void faults.push({ _tag: "Unreachable", started: options.started ?? false }),
    when: (match) => ({
      succeed: (...outputs) => void rules.push({ match, ending: succeed(outputs) }),
      fail: (message) => void rules.push({ match, ending: fail(message) })
    }),
    reset: () => {
      queue.length = 0
      faults.length = 0
      rules.length = 0
      calls.length = 0
      generations.clear()
      byKey.clear()
      starts = 0
      polls = 0
      cancels = 0
    }
  }
}
