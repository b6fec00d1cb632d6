import { describe, expect, it } from "vitest"
import type { AnyRefusal } from "../../src/domain/refusal.js"
import {
  checkUploadRequest,
  isUploadGrantSigned,
  signUploadGrant,
  storedUploadProblem,
  UPLOAD_LIMITS
} from "../../src/domain/upload.js"

const codeOf = (result: ReturnType<typeof checkUploadRequest>) => ("code" in result ? (result as AnyRefusal).code : "ok")

describe("presign request rules (spec 4.2, 8)", () => {
  it("accepts the eight types with their size limits in bytes", () => {
    expect(Object.keys(UPLOAD_LIMITS).sort()).toEqual(
      ["audio/mpeg", "audio/wav", "image/gif", "image/jpeg", "image/png", "image/webp", "video/mp4", "video/webm"]
    )
    expect(checkUploadRequest("cat.png", "image/png")).toEqual(
      { filename: "cat.png", contentType: "image/png", maxSize: 10_485_760, size: null }
    )
    expect(checkUploadRequest("clip.mp4", "VIDEO/MP4")).toMatchObject({ contentType: "video/mp4", maxSize: 104_857_600 })
    expect(checkUploadRequest("song.mp3", "audio/mpeg")).toMatchObject({ maxSize: 52_428_800 })
  })

  const cases: Array<[unknown, unknown, string]> = [
    [undefined, "image/png", "VALIDATION_ERROR"],
    ["", "image/png", "VALIDATION_ERROR"],
    ["   ", "image/png", "VALIDATION_ERROR"],
    [42, "image/png", "VALIDATION_ERROR"],
    ["../etc/passwd", "image/png", "VALIDATION_ERROR"],
    ["dir\\\\file.png", "image/png", "VALIDATION_ERROR"],
    ["bad\u0000name.png", "image/png", "VALIDATION_ERROR"],
    ["new\nline.png", "image/png", "VALIDATION_ERROR"],
    ["..", "image/png", "VALIDATION_ERROR"],
    ["x".repeat(256), "image/png", "VALIDATION_ERROR"],
    ["ok.png", undefined, "VALIDATION_ERROR"],
    ["ok.png", "", "VALIDATION_ERROR"],
    ["ok.png", "png", "VALIDATION_ERROR"],
    ["ok.png", "image/png; charset=x", "VALIDATION_ERROR"],
    ["ok.png", "image/svg+xml", "INVALID_CONTENT_TYPE"],
    ["ok.pdf", "application/pdf", "INVALID_CONTENT_TYPE"],
    ["ok.png", "text/html", "INVALID_CONTENT_TYPE"],
    ["x".repeat(255), "image/png", "ok"],
    ["photo (1) – été.jpg", "image/jpeg", "ok"]
  ]
  for (const [filename, contentType, expected] of cases) {
    it(`${JSON.stringify(filename)?.slice(0, 40)} + ${JSON.stringify(contentType)} -> ${expected}`, () => {
      expect(codeOf(checkUploadRequest(filename, contentType))).toBe(expected)
    })
  }
})

describe("a size declared at presign", () => {
  it("is optional, a positive integer of bytes, and at most the type's limit", () => {
    expect(checkUploadRequest("a.png", "image/png", 10_485_760)).toMatchObject({ size: 10_485_760 })
    expect(checkUploadRequest("a.png", "image/png", null)).toMatchObject({ size: null })
    expect(codeOf(checkUploadRequest("a.png", "image/png", 10_485_761))).toBe("FILE_TOO_LARGE")
    expect(codeOf(checkUploadRequest("a.mp4", "video/mp4", 10_485_761))).toBe("ok")
    for (const bad of [0, -1, 1.5, "12", Number.NaN, Number.MAX_SAFE_INTEGER + 1]) {
      expect(codeOf(checkUploadRequest("a.png", "image/png", bad))).toBe("VALIDATION_ERROR")
    }
  })
})

describe("a stored upload, checked after its URL closed", () => {
  it("is kept within its type's limit and type, and rejected otherwise", () => {
    const png = { contentType: "image/png" }
    expect(storedUploadProblem(png, { size: 10_485_760, contentType: "image/png" })).toBeNull()
    expect(storedUploadProblem(png, { size: 1, contentType: "IMAGE/PNG; x=y" })).toBeNull()
    expect(storedUploadProblem(png, { size: 10_485_761, contentType: "image/png" })).toMatch(/limit/)
    expect(storedUploadProblem(png, { size: 1, contentType: "text/html" })).toMatch(/text\/html/)
  })
})

describe("signed upload grants", () => {
  const grant = { uploadId: "upl_1", contentType: "image/png", maxSize: 10, size: null, expiresAt: 1_000 }
  it("verify only the exact grant with the same secret", () => {
    const sig = signUploadGrant("s", grant)
    expect(isUploadGrantSigned("s", grant, sig)).toBe(true)
    expect(isUploadGrantSigned("t", grant, sig)).toBe(false)
    for (const changed of [{ uploadId: "upl_2" }, { contentType: "image/gif" }, { maxSize: 11 }, { size: 5 }, { expiresAt: 2_000 }]) {
      expect(isUploadGrantSigned("s", { ...grant, ...changed }, sig)).toBe(false)
    }
    expect(isUploadGrantSigned("s", grant, "zz")).toBe(false)
    expect(isUploadGrantSigned("s", grant, sig.toUpperCase())).toBe(false)
  })
})
