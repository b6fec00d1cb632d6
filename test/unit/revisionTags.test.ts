import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { ifMatchRevision, revisionTag } from "../../src/http/revisionTags.js"

describe("If-Match on catalog revisions", () => {
  it("reads the revision of the entity tag the ETag gave", () => {
    expect(ifMatchRevision(revisionTag(7))).toEqual(Either.right(7))
    expect(ifMatchRevision(` ${revisionTag(0)} `)).toEqual(Either.right(0))
  })

  it("sets no condition when absent or *", () => {
    expect(ifMatchRevision(undefined)).toEqual(Either.right(undefined))
    expect(ifMatchRevision("*")).toEqual(Either.right(undefined))
  })

  it("refuses what it cannot read as one revision rather than letting it pass", () => {
    for (const header of ["7", "W/\"7\"", "\"7\", \"8\"", "\"x\"", "\"07\"", "\"-1\"", "", "\"1234567890123456\""]) {
      const read = ifMatchRevision(header)
      expect(Either.isLeft(read), header).toBe(true)
      if (Either.isLeft(read)) expect(read.left.code).toBe("VALIDATION_ERROR")
    }
  })
})
