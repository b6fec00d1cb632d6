import type { ByteRange } from "../ports/BlobStore.js"

export type RangeRequest =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Part"; readonly range: ByteRange }
  | { readonly _tag: "Unsatisfiable" }

const SINGLE_BYTE_RANGE = /^bytes=(\d*)-(\d*)$/

/**
 * What a Range header asks of a file of `size` bytes (RFC 9110 §14). One byte range is served
 * as a part, its end clamped to the file and a suffix longer than the file meaning all of it; a
 * range starting past the end cannot be satisfied. No header, a malformed one, another unit or
 * several ranges get the whole file, which the RFC allows. (range-parser, the usual library,
 * refuses an over-long suffix, so this is written out.)
 */
export const requestedRange = (size: number, header: string | undefined): RangeRequest => {
  const match = header === undefined ? null : SINGLE_BYTE_RANGE.exec(header.trim())
  if (match === null) return { _tag: "Whole" }
  const [, first = "", last = ""] = match
  if (first === "" && last === "") return { _tag: "Whole" }
  if (first === "") {
    const suffix = Number(last)
    return suffix === 0 || size === 0 ? { _tag: "Unsatisfiable" } : { _tag: "Part", range: { start: Math.max(0, size - suffix), end: size - 1 } }
  }
  const start = Number(first)
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1)
  if (last !== "" && Number(last) < start) return { _tag: "Whole" }
  return start >= size ? { _tag: "Unsatisfiable" } : { _tag: "Part", range: { start, end } }
}
