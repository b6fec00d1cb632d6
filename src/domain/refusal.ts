import { type Cause, Schema } from "effect"

/** What a refusal adds for the client to act on (the field at fault, the limit, the job's id): the envelope's `details`. */
export const RefusalDetails = Schema.Record(Schema.String, Schema.Unknown)
export type RefusalDetails = typeof RefusalDetails.Type

/** The fields every refusal carries: the envelope's `message` and `details`. */
export const refusalFields = {
  message: Schema.String,
  details: Schema.optional(RefusalDetails)
}
export type RefusalFields = typeof refusalFields

/** ...and a refusal the client may send again later carries when: the answer's Retry-After. */
export const retryLaterFields = {
  ...refusalFields,
  retryAfterSeconds: Schema.optional(Schema.Number)
}
export type RetryLaterFields = typeof retryLaterFields

/** Marks every refusal instance, whichever class: what `isRefusal` looks for. */
export const RefusalTypeId: unique symbol = Symbol.for("genjobs/Refusal")

/** Whether a value is one of the engine's refusals (of any class). */
export const isRefusal = (u: unknown): u is AnyRefusal => typeof u === "object" && u !== null && RefusalTypeId in u

/** Where a refusal class says what the client is told: the spec's code and the HTTP status. */
export interface RefusalAnswer<Code extends string = string> {
  readonly code: Code
  readonly status: number
}

/** What a refusal instance has besides its fields: its class's code and status, and the mark. */
export interface RefusalMarks<Code extends string> extends RefusalAnswer<Code> {
  readonly [RefusalTypeId]: true
}

/**
 * The class `Refusal` and `RetryLaterRefusal` make: `Schema.TaggedError`'s, its instances also
 * carrying `RefusalMarks`, the class its `code` and `status`. Named, so the declarations of the
 * classes that extend it can name their base.
 */
export type RefusalClass<Self, Tag extends string, Code extends string, Fields extends Schema.Struct.Fields> =
  & Schema.Class<Self, Schema.TaggedStruct<Tag, Fields>, Cause.YieldableError & RefusalMarks<Code>>
  & RefusalAnswer<Code>

/**
 * The class of one refusal, over the fields given. `Schema.TaggedError`'s check that a class
 * names itself (`Self`) cannot see through the generic `Self` here, hence the casts; the type
 * returned is what `Schema.TaggedError` gives once `Self` is known, plus the marks. The class
 * schema is built from the outermost class on first use (`this` in its statics), so the class
 * that extends `Refused` is the one a decode constructs.
 */
const refusalOf = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
<Self>() =>
<Tag extends string, Code extends string>(tag: Tag, answer: RefusalAnswer<Code>): RefusalClass<Self, Tag, Code, Fields> => {
  // `httpApiStatus` is the annotation HttpApi reads for the status of an endpoint's error.
  const Base = Schema.TaggedError<Self>()(tag, fields, { httpApiStatus: answer.status }) as unknown as new(
    ...args: Array<any>
  ) => object
  class Refused extends Base {
    /** The spec's code of every refusal of this class (the envelope's `error.code`). */
    static readonly code = answer.code
    /** The HTTP status every refusal of this class is answered with. */
    static readonly status = answer.status
    /** The spec's code, on the instance (on the prototype: nothing more is stored per refusal). */
    get code(): Code {
      return answer.code
    }
    /** The HTTP status, on the instance. */
    get status(): number {
      return answer.status
    }
    get [RefusalTypeId](): true {
      return true
    }
  }
  return Refused as unknown as RefusalClass<Self, Tag, Code, Fields>
}

/**
 * A refusal's class: a tagged error carrying `message` and optional `details`, its spec code and
 * HTTP status attached to the class (statics `code` and `status`, the status also as the
 * HttpApi annotation an endpoint's `addError` reads), e.g.
 * `class JobNotFound extends Refusal<JobNotFound>()("JobNotFound", { code: "JOB_NOT_FOUND", status: 404 }) {}`.
 */
export const Refusal: <Self = never>() => <Tag extends string, Code extends string>(
  tag: Tag,
  answer: RefusalAnswer<Code>
) => RefusalClass<Self, Tag, Code, RefusalFields> = refusalOf(refusalFields)

/** A refusal the client may send again later (a limit, a store that is busy or down): it also carries `retryAfterSeconds`. */
export const RetryLaterRefusal: <Self = never>() => <Tag extends string, Code extends string>(
  tag: Tag,
  answer: RefusalAnswer<Code>
) => RefusalClass<Self, Tag, Code, RetryLaterFields> = refusalOf(retryLaterFields)

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
export type RefusalConstructor = new(props: { readonly message: string; readonly details?: RefusalDetails }) => AnyRefusal
