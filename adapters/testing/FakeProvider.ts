import { Deferred, Effect, Exit, FiberId } from "effect"
import { type GeneratedOutput, GenerationFailed, type GenerationRequest, type Generator } from "../../src/ports/Generator.js"
import { defaultOutputs } from "./outputs.js"

/** How one job ends. No outputs means the model's default outputs. */
type Ending =
  | { readonly _tag: "Succeed"; readonly outputs: ReadonlyArray<GeneratedOutput> }
  | { readonly _tag: "Fail"; readonly message: string }

type Behaviour = Ending | { readonly _tag: "Hang"; readonly hang: HangControl }

interface HangControl {
  readonly gate: Deferred.Deferred<Ending>
  readonly reach: (request: GenerationRequest) => void
}

/** A job held in `processing` until the test lets it go. */
export interface Hang {
  /** Resolves when a job reaches the hang: it is then processing, with its lease held. */
  readonly reached: Promise<GenerationRequest>
  /** Lets the job complete, with these outputs or the model's default ones. */
  readonly release: (...outputs: ReadonlyArray<GeneratedOutput>) => void
  /** Lets the job fail with GENERATION_FAILED and this message. */
  readonly fail: (message: string) => void
}

/** Which jobs a rule applies to: a model slug and/or input fields that must be equal. */
export type JobMatch =
  | { readonly model?: string; readonly input?: Readonly<Record<string, unknown>> }
  | ((request: GenerationRequest) => boolean)

export interface FakeProvider {
  /** The Generator to register under the catalog's provider id. */
  readonly generator: Generator
  /** Every generation request the provider received, oldest first (a retried job shows twice). */
  readonly calls: ReadonlyArray<GenerationRequest>
  /** The next job completes with these outputs (none: the model's default ones). Queued in order. */
  readonly succeedNext: (...outputs: ReadonlyArray<GeneratedOutput>) => void
  /** The next job fails with GENERATION_FAILED and this message. Queued in order. */
  readonly failNext: (message?: string) => void
  /** The next job hangs until the handle is released. Queued in order. */
  readonly hangNext: () => Hang
  /** Every job that matches (and has nothing queued for it) ends this way. First matching rule wins. */
  readonly when: (match: JobMatch) => {
    readonly succeed: (...outputs: ReadonlyArray<GeneratedOutput>) => void
    readonly fail: (message: string) => void
  }
  /** Forgets the queue, the rules and the calls. */
  readonly reset: () => void
}

const matches = (match: JobMatch, request: GenerationRequest): boolean => {
  if (typeof match === "function") return match(request)
  if (match.model !== undefined && match.model !== request.model.slug) return false
  return Object.entries(match.input ?? {}).every(([field, value]) => request.job.input[field] === value)
}

const end = (ending: Ending, request: GenerationRequest): Effect.Effect<ReadonlyArray<GeneratedOutput>, GenerationFailed> =>
  ending._tag === "Fail"
    ? Effect.fail(new GenerationFailed({ message: ending.message }))
    : Effect.succeed(ending.outputs.length > 0 ? ending.outputs : defaultOutputs(request.model))

const succeed = (outputs: ReadonlyArray<GeneratedOutput>): Ending => ({ _tag: "Succeed", outputs })
const fail = (message: string): Ending => ({ _tag: "Fail", message })

/**
 * A provider the test scripts: queued behaviours for the next jobs, then rules by model or
 * input, then a small valid file of the model's category. Scripting is synchronous, so the same
 * API serves Promise tests and Effect tests.
 */
export const makeFakeProvider = (): FakeProvider => {
  const queue: Array<Behaviour> = []
  const rules: Array<{ readonly match: JobMatch; readonly ending: Ending }> = []
  const calls: Array<GenerationRequest> = []

  const run = (behaviour: Behaviour, request: GenerationRequest) =>
    behaviour._tag !== "Hang"
      ? end(behaviour, request)
      : Effect.sync(() => behaviour.hang.reach(request)).pipe(
        Effect.zipRight(Deferred.await(behaviour.hang.gate)),
        Effect.flatMap((ending) => end(ending, request))
      )

  const generator: Generator = {
    generate: (request) =>
      Effect.suspend(() => {
        calls.push(request)
        const behaviour = queue.shift() ?? rules.find((rule) => matches(rule.match, request))?.ending ?? succeed([])
        return run(behaviour, request)
      })
  }

  const hangNext = (): Hang => {
    const gate = Deferred.unsafeMake<Ending>(FiberId.none)
    let reach: (request: GenerationRequest) => void = () => {}
    const reached = new Promise<GenerationRequest>((resolve) => (reach = resolve))
    queue.push({ _tag: "Hang", hang: { gate, reach } })
    return {
      reached,
      release: (...outputs) => Deferred.unsafeDone(gate, Exit.succeed(succeed(outputs))),
      fail: (message) => Deferred.unsafeDone(gate, Exit.succeed(fail(message)))
    }
  }

  return {
    generator,
    calls,
    succeedNext: (...outputs) => void queue.push(succeed(outputs)),
    failNext: (message = "the fake provider failed as scripted") => void queue.push(fail(message)),
    hangNext,
    when: (match) => ({
      succeed: (...outputs) => void rules.push({ match, ending: succeed(outputs) }),
      fail: (message) => void rules.push({ match, ending: fail(message) })
    }),
    reset: () => {
      queue.length = 0
      rules.length = 0
      calls.length = 0
    }
  }
}
