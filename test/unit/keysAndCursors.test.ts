import { describe, expect, it } from "vitest"
import { generateKeySecret, hashKeySecret, isWellFormedKey, KEY_PREFIX, keyHint, sameDigest } from "../../src/domain/apiKeySecret.js"
import { canonicalJson } from "../../src/domain/canonicalJson.js"
import { decodeCursor, encodeCursor, isAfterCursor } from "../../src/domain/cursor.js"
import { base64Token, newJobId, newLedgerEntryId } from "../../src/domain/ids.js"

describe("API key secrets", () => {
  it("are prefixed, well-formed and unique", () => {
    const keys = Array.from({ length: 1000 }, generateKeySecret)
    expect(new Set(keys).size).toBe(1000)
    expect(keys.every((k) => k.startsWith(KEY_PREFIX) && isWellFormedKey(k))).toBe(true)
  })

  it("refuses malformed keys before any lookup", () => {
    const good = generateKeySecret()
    for (const bad of ["", good.slice(1), `${good}x`, good.replace(KEY_PREFIX, "sk_"), `${good.slice(0, -1)}!`]) {
      expect(isWellFormedKey(bad)).toBe(false)
    }
  })

  it("stores a SHA-256 hex digest and a short hint", () => {
    const key = generateKeySecret()
    expect(hashKeySecret(key)).toMatch(/^[0-9a-f]{64}$/)
    expect(hashKeySecret(key)).not.toContain(key.slice(KEY_PREFIX.length))
    expect(keyHint(key)).toBe(key.slice(0, KEY_PREFIX.length + 4))
  })

  it("compares digests in constant time and refuses different lengths", () => {
    const a = hashKeySecret("a")
    expect(sameDigest(a, a)).toBe(true)
    expect(sameDigest(a, hashKeySecret("b"))).toBe(false)
    expect(sameDigest(a, a.slice(0, 62))).toBe(false)
    expect(sameDigest("", "")).toBe(false)
  })
})

describe("job list cursors", () => {
  it("round-trip and are opaque", () => {
    const cursor = { createdAt: 1_700_000_000_123, id: "job_abc" }
    const text = encodeCursor(cursor)
    expect(text).not.toContain("job_abc")
    expect(decodeCursor(text)).toEqual(cursor)
  })

  it("refuse anything the API did not issue", () => {
    for (const bad of ["", "bogus", Buffer.from("[1]").toString("base64url"), Buffer.from('["x","y"]').toString("base64url"), Buffer.from('[1.5,"y"]').toString("base64url")]) {
      expect(decodeCursor(bad)).toBeUndefined()
    }
  })

  it("order newest first with ties broken by id", () => {
    const cursor = { createdAt: 100, id: "job_m" }
    expect(isAfterCursor({ createdAt: 99, id: "job_z" }, cursor)).toBe(true)
    expect(isAfterCursor({ createdAt: 100, id: "job_a" }, cursor)).toBe(true)
    expect(isAfterCursor({ createdAt: 100, id: "job_m" }, cursor)).toBe(false)
    expect(isAfterCursor({ createdAt: 100, id: "job_z" }, cursor)).toBe(false)
    expect(isAfterCursor({ createdAt: 101, id: "job_a" }, cursor)).toBe(false)
  })
})

describe("canonical JSON for idempotency", () => {
  it("ignores key order at every depth and drops undefined fields", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { y: 1, x: 2 }], c: undefined } })).toBe(canonicalJson({ a: { d: [3, { x: 2, y: 1 }] }, b: 1 }))
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]))
  })
})

describe("job ids", () => {
  it("sort in creation order, also within one millisecond and when the clock steps back", () => {
    const ids = [newJobId(5_000), newJobId(5_000), newJobId(5_000), newJobId(4_000), newJobId(6_000)]
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
  })
})

describe("id tokens", () => {
  it("are the bytes' base64 with + and / as x and no padding, for every length and byte", () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => (i * 167 + 13) % 256)
    for (let length = 0; length <= 16; length++) {
      for (let start = 0; start + length <= bytes.length; start += 7) {
        const part = bytes.subarray(start, start + length)
        const expected = Buffer.from(part).toString("base64").replace(/[+/]/g, "x").replace(/=+$/, "")
        expect(base64Token(part)).toBe(expected)
      }
    }
  })
})

describe("ledger entry ids", () => {
  it("sort in the order the lines were posted, also within one millisecond, so a statement lists them so", () => {
    const ids = [newLedgerEntryId(5_000), newLedgerEntryId(5_000), newJobId(5_000), newLedgerEntryId(5_000), newLedgerEntryId(4_000)]
      .filter((id) => id.startsWith("led_"))
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
  })
})
