import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** What a refusal adds for the client to act on (the field at fault, the limit, the job's id): the envelope's `details`. */
export const RefusalDetails = Schema.Record({ key: Schema.String, value: Schema.Unknown })
export type RefusalDetails = typeof RefusalDetails.Type

/** The fields every refusal carries: the envelope's `message` and `details`. */
const refusalFields = {
  message: Schema.String,
  details: Schema.optional(RefusalDetails)
}

/** ...and a refusal the client may send again later carries when: the answer's Retry-After. */
const retryLaterFields = {
  ...refusalFields,
  retryAfterSeconds: Schema.optional(Schema.Number)
}

/** Marks every refusal instance, whichever class: what `isRefusal` looks for. */
export const RefusalTypeId: unique symbol = Symbol.for("genjobs/Refusal")

/** Whether a value is one of the engine's refusals (of any class). */
export const isRefusal = (u: unknown): u is AnyRefusal => typeof u === "object" && u !== null && RefusalTypeId in u

/** Where a refusal class says what the client is told: the spec's code and the HTTP status. */
export interface RefusalAnswer<Code extends string = string> {
  readonly code: Code
  readonly status: number
}

type RefusalFields = typeof refusalFields
type RetryLaterFields = typeof retryLaterFields

/**
 * The tagged error class of one refusal. `Schema.TaggedError`'s check that a class names itself
 * (`Self`) cannot see through this function's generic `Self`, hence the cast to the type it
 * returns once `Self` is known.
 */
const taggedError = <Self, Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields, status: number) =>
  Schema.TaggedError<Self>()(tag, fields, HttpApiSchema.annotations({ status })) as unknown as Schema.TaggedErrorClass<
    Self,
    Tag,
    { readonly _tag: Schema.tag<Tag> } & Fields
  >

/**
 * A refusal's class: a tagged error carrying `message` and optional `details`, its spec code and
 * HTTP status attached to the class (statics `code` and `status`, the status also as the
 * HttpApi annotation an endpoint's `addError` reads), e.g.
 * `class JobNotFound extends Refusal<JobNotFound>()("JobNotFound", { code: "JOB_NOT_FOUND", status: 404 }) {}`.
 */
export const Refusal = <Self = never>() => <Tag extends string, Code extends string>(tag: Tag, answer: RefusalAnswer<Code>) => {
  class Refused extends taggedError<Self, Tag, RefusalFields>(tag, refusalFields, answer.status) {
    /** The spec's code of every refusal of this class (the envelope's `error.code`). */
    static readonly code: Code = answer.code
    /** The HTTP status every refusal of this class is answered with. */
    static readonly status: number = answer.status
    /** The spec's code, on the instance: what the envelope and a log line read. */
    get code(): Code {
      return answer.code
    }
    /** The HTTP status, on the instance: what the answer is sent with. */
    get status(): number {
      return answer.status
    }
    get [RefusalTypeId](): true {
      return true
    }
  }
  return Refused
}

/** A refusal the client may send again later (a limit, a store that is busy or down): it also carries `retryAfterSeconds`. */
export const RetryLaterRefusal = <Self = never>() => <Tag extends string, Code extends string>(tag: Tag, answer: RefusalAnswer<Code>) => {
  class Refused extends taggedError<Self, Tag, RetryLaterFields>(tag, retryLaterFields, answer.status) {
    static readonly code: Code = answer.code
    static readonly status: number = answer.status
    get code(): Code {
      return answer.code
    }
    get status(): number {
      return answer.status
    }
    get [RefusalTypeId](): true {
      return true
    }
  }
  return Refused
}

/** What every refusal instance offers the HTTP layer: the shape the envelope and its headers are made from. */
export interface AnyRefusal {
  readonly _tag: string
  readonly code: string
  readonly status: number
  readonly message: string
  readonly details?: RefusalDetails | undefined
  readonly retryAfterSeconds?: number | undefined
}

/** A refusal class that carries no Retry-After: what a helper that refuses with one of several classes takes. */
export type RefusalClass = new(props: { readonly message: string; readonly details?: RefusalDetails }) => AnyRefusal
