import { describe, expect, it } from "vitest"
import { requestedRange } from "../../src/http/byteRange.js"

describe("Range headers on file downloads", () => {
  const part = (start: number, end: number) => ({ _tag: "Part", range: { start, end } })
  const cases: Array<[string | undefined, unknown]> = [
    [undefined, { _tag: "Whole" }],
    ["bytes=0-9", part(0, 9)],
    ["bytes=90-", part(90, 99)],
    ["bytes=-10", part(90, 99)],
    ["bytes=-500", part(0, 99)],
    ["bytes=50-500", part(50, 99)],
    ["bytes=99-99", part(99, 99)],
    ["bytes=100-", { _tag: "Unsatisfiable" }],
    ["bytes=200-300", { _tag: "Unsatisfiable" }],
    ["bytes=-0", { _tag: "Unsatisfiable" }],
    [" bytes=5-5 ", part(5, 5)],
    ["bytes=9-3", { _tag: "Whole" }],
    ["bytes=-", { _tag: "Whole" }],
    ["bytes=0-1,5-6", { _tag: "Whole" }],
    ["items=0-1", { _tag: "Whole" }],
    ["nonsense", { _tag: "Whole" }],
    ["bytes=x-y", { _tag: "Whole" }]
  ]
  for (const [header, expected] of cases) {
    it(`${header ?? "(none)"} of a 100-byte file`, () => {
      expect(requestedRange(100, header)).toEqual(expected)
    })
  }
})

it("an empty file has no range to give", () => {
  expect(requestedRange(0, "bytes=0-")).toEqual({ _tag: "Unsatisfiable" })
  expect(requestedRange(0, "bytes=-5")).toEqual({ _tag: "Unsatisfiable" })
  expect(requestedRange(0, undefined)).toEqual({ _tag: "Whole" })
})
