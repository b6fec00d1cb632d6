import { describe, expect, it } from "vitest"
import {
  type ChangeEntry,
  type ChangePosition,
  changeOf,
  decodeChangeCursor,
  encodeChangeCursor,
  nextAfter
} from "../../src/domain/change.js"
import { job } from "../conformance/fixtures.js"
import type { AccountId } from "../../src/domain/ids.js"

const entryAt = (position: ChangePosition) => ({ position }) as ChangeEntry

describe("change cursors", () => {
  it("round-trip a position and refuse anything the API did not issue", () => {
    const position = { txn: 2 ** 40 + 7, seq: 12 }
    expect(decodeChangeCursor(encodeChangeCursor(position))).toEqual(position)
    for (const text of ["", "nope", Buffer.from("[1]").toString("base64url"), Buffer.from("[-1,2]").toString("base64url"),
      Buffer.from("[1.5,2]").toString("base64url"), Buffer.from('["1",2]').toString("base64url"), Buffer.from("[1,2,3]").toString("base64url")]) {
      expect(decodeChangeCursor(text)).toBeUndefined()
    }
  })
})

describe("nextAfter", () => {
  const after = { txn: 5, seq: 3 }
  it("is the last entry after a full read: more may follow at once", () => {
    const read = { entries: [entryAt({ txn: 6, seq: 1 }), entryAt({ txn: 7, seq: 9 })], settled: { txn: 9, seq: 0 } }
    expect(nextAfter(after, read, 2)).toEqual({ txn: 7, seq: 9 })
  })
  it("is the settled position after a read that was not full, so a quiet cursor moves on", () => {
    expect(nextAfter(after, { entries: [entryAt({ txn: 6, seq: 1 })], settled: { txn: 9, seq: 0 } }, 2)).toEqual({ txn: 9, seq: 0 })
    expect(nextAfter(after, { entries: [], settled: { txn: 9, seq: 0 } }, 2)).toEqual({ txn: 9, seq: 0 })
  })
  it("never moves a cursor back", () => {
    expect(nextAfter(after, { entries: [], settled: { txn: 4, seq: 0 } }, 2)).toEqual(after)
  })
})

describe("changeOf", () => {
  const owner = "acc_1" as AccountId
  it("is an entry for the three endings only, refunding all but a completion", () => {
    expect(changeOf(job(owner, { status: "pending" }), 1)).toBeUndefined()
    expect(changeOf(job(owner, { status: "processing" }), 1)).toBeUndefined()
    expect(changeOf(job(owner, { status: "completed", completedAt: 9 }), 1)).toMatchObject({ status: "completed", endedAt: 9, refundedMicroCents: 0 })
    for (const status of ["failed", "cancelled"] as const) {
      expect(changeOf(job(owner, { status, costMicroCents: 700 }), 1)).toMatchObject({ status, endedAt: 1, refundedMicroCents: 700 })
    }
  })
})
