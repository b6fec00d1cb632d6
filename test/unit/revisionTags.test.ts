import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { ifMatchRevision, revisionTag } from "../../src/http/revisionTags.js"

describe("If-Match on catalog revisions", () => {
  it("reads the revision of the entity tag the ETag gave", () => {
    expect(ifMatchRevision(revisionTag(7))).toEqual(Result.succeed(7))
    expect(ifMatchRevision(` ${revisionTag(0)} `)).toEqual(Result.succeed(0))
  })

  it("sets no condition when absent or *", () => {
    expect(ifMatchRevision(undefined)).toEqual(Result.succeed(undefined))
    expect(ifMatchRevision("*")).toEqual(Result.succeed(undefined))
  })

  it("refuses what it cannot read as one revision rather than letting it pass", () => {
    for (const header of ["7", "W/\"7\"", "\"7\", \"8\"", "\"x\"", "\"07\"", "\"-1\"", "", "\"1234567890123456\""]) {
      const read = ifMatchRevision(header)
      expect(Result.isFailure(read), header).toBe(true)
      if (Result.isFailure(read)) expect(read.failure.code).toBe("VALIDATION_ERROR")
    }
  })
})
