import { describe, expect, it } from "vitest"
import { MAX_WEBHOOK_URL_LENGTH, parseWebhookUrl } from "../../src/domain/webhookUrl.js"

const codes = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const hex = (code: number) => `U+${code.toString(16).toUpperCase().padStart(4, "0")}`

describe("a job's webhookUrl", () => {
  const controls = [...codes(0x00, 0x1f), 0x7f, ...codes(0x80, 0x9f)]
  for (const code of controls) {
    const c = String.fromCharCode(code)
    it(`refuses the control character ${hex(code)} anywhere in it`, () => {
      for (const url of [`https://hooks.test/a${c}b`, `https://hoo${c}ks.test/`, `${c}https://hooks.test/`, `https://hooks.test/?q=${c}`, `https://hooks.test/${c}`]) {
        expect(parseWebhookUrl(url)).toEqual({ _tag: "Invalid", reason: "must not contain control characters" })
      }
    })
  }

  it("takes the characters around the control ranges, as the URL parser encodes them", () => {
    expect(parseWebhookUrl("https://hooks.test/a b?q=\u00a0~")).toEqual({ _tag: "Valid", href: "https://hooks.test/a%20b?q=%C2%A0~" })
  })

  it("answers the parsed URL, the one called", () => {
    expect(parseWebhookUrl(" https://Hooks.TEST:443/in/../hook?x=ü ")).toEqual({ _tag: "Valid", href: "https://hooks.test/hook?x=%C3%BC" })
    expect(parseWebhookUrl("https://hooks.test")).toEqual({ _tag: "Valid", href: "https://hooks.test/" })
    expect(parseWebhookUrl("https://[2606:4700::1111]:8443/h")).toEqual({ _tag: "Valid", href: "https://[2606:4700::1111]:8443/h" })
  })

  it("refuses other schemes, credentials and what does not parse", () => {
    expect(parseWebhookUrl("http://hooks.test/")).toEqual({ _tag: "Invalid", reason: "must use the https:// scheme" })
    expect(parseWebhookUrl("https://user:pw@hooks.test/")).toEqual({ _tag: "Invalid", reason: "must not carry credentials" })
    expect(parseWebhookUrl("hooks.test/in")).toEqual({ _tag: "Invalid", reason: "is not a valid URL" })
  })

  it("holds the length limit for the URL given and for the URL called", () => {
    const base = "https://hooks.test/"
    const tooLong = { _tag: "Invalid", reason: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` }
    expect(parseWebhookUrl(base + "a".repeat(MAX_WEBHOOK_URL_LENGTH - base.length))._tag).toBe("Valid")
    expect(parseWebhookUrl(base + "a".repeat(MAX_WEBHOOK_URL_LENGTH - base.length + 1))).toEqual(tooLong)
    // 1,000 spaces become 3,000 characters of %20.
    expect(parseWebhookUrl(base + " ".repeat(1_000) + "a")).toEqual(tooLong)
  })
})
