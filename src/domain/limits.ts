import { Refusal } from "./refusal.js"

/**
 * Limits that keep every store answering alike. Each store would fail differently past them
 * (PostgreSQL refuses U+0000 in TEXT and overflows INTEGER; SQLite and memory would accept),
 * so the engine refuses such input before it reaches any store.
 */

/** PostgreSQL cannot store U+0000 in TEXT; no request string may carry it, on any store. */
export const hasNul = (text: string): boolean => text.includes("\u0000")

/** The largest value of a 32-bit INTEGER column. */
export const INT32_MAX = 2_147_483_647

/**
 * Money (micro-cents) stays a safe integer, so JavaScript adds it exactly; the sum of two such
 * amounts still fits a BIGINT column.
 */
export const MAX_MICRO_CENTS = Number.MAX_SAFE_INTEGER

/** A list page's size when none is asked, and the largest one may ask for. */
export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 100

/** Deeper JSON is refused: no real request nests this far, and deep values strain every recursive reader. */
export const MAX_JSON_DEPTH = 64

export type JsonProblem =
  | { readonly _tag: "TooDeep" }
  | { readonly _tag: "Nul"; readonly path: string }

const pointerPart = (key: string | number) => String(key).replaceAll("~", "~0").replaceAll("/", "~1")

/** The JSON pointer (RFC 6901) of the value these keys and indexes lead to. */
export const jsonPointer = (path: ReadonlyArray<string | number>): string => path.map((part) => `/${pointerPart(part)}`).join("")

/** What the engine reads of a parsed JSON value, in one walk. */
export interface JsonSurvey {
  /** The first reason to refuse it; when there is one, `members` counts only what was walked before it. */
  readonly problem: JsonProblem | undefined
  /**
   * How many members its objects hold (arrays' items aside). JSON.parse keeps one per distinct
   * key, so fewer than the text writes means a key repeated in one object (src/http/duplicateKeys.ts).
   */
  readonly members: number
}

/**
 * The first reason to refuse a parsed JSON value: nesting beyond `maxDepth` (the top-level
 * value is depth 1), or a NUL in a string or key (with its JSON pointer); and its objects'
 * members, counted on the same walk. Iterative, so a deep value cannot exhaust the stack.
 */
export const surveyJson = (value: unknown, maxDepth: number = MAX_JSON_DEPTH): JsonSurvey => {
  // Each value's path is its parent and its key, written out as a pointer only for a refusal.
  interface Pending {
    readonly value: unknown
    readonly depth: number
    readonly parent: Pending | undefined
    readonly key: string
  }
  const pointerOf = (at: Pending | undefined, last?: string) => {
    const parts: Array<string> = last === undefined ? [] : [last]
    for (let step = at; step?.parent !== undefined; step = step.parent) parts.push(step.key)
    return parts.length === 0 ? "/" : jsonPointer(parts.reverse())
  }
  const pending: Array<Pending> = [{ value, depth: 1, parent: undefined, key: "" }]
  let members = 0
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { depth } = next
    if (typeof next.value === "string") {
      if (hasNul(next.value)) return { problem: { _tag: "Nul", path: pointerOf(next) }, members }
    } else if (next.value !== null && typeof next.value === "object") {
      if (depth > maxDepth) return { problem: { _tag: "TooDeep" }, members }
      const entries = Object.entries(next.value)
      if (!Array.isArray(next.value)) members += entries.length
      for (const [key, child] of entries) {
        if (hasNul(key)) return { problem: { _tag: "Nul", path: pointerOf(next, key) }, members }
        pending.push({ value: child, depth: depth + 1, parent: next, key })
      }
    }
  }
  return { problem: undefined, members }
}

// What the request limits refuse (applied by http/requestLimits.ts before a handler runs).

/** The request body is larger than the cap. */
export class PayloadTooLarge extends Refusal<PayloadTooLarge>()("PayloadTooLarge", { code: "PAYLOAD_TOO_LARGE", status: 413 }) {}

/** The request body did not arrive in time; the connection is closed. */
export class RequestTimeout extends Refusal<RequestTimeout>()("RequestTimeout", { code: "REQUEST_TIMEOUT", status: 408 }) {}
