import { createHmac, webcrypto } from "node:crypto"
import { describe, expect, it } from "vitest"
import { signatureHeader, signWebhook, verifyWebhook } from "../../src/domain/webhookSignature.js"
import { parseRetryAfterMs } from "../../src/domain/retryAfter.js"
import { MAX_ATTEMPTS, nextAttemptAt } from "../../src/domain/webhookSchedule.js"
import { isForbiddenAddress } from "../../src/domain/publicAddress.js"

/** The spec's algorithm written independently, with WebCrypto instead of node:crypto's Hmac. */
const referenceSignature = async (secret: string, timestamp: number, body: string) => {
  const key = await webcrypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
  const mac = await webcrypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${timestamp}.${body}`))
  return `sha256=${Buffer.from(mac).toString("hex")}`
}

describe("webhook signatures (spec 6.3)", () => {
  const body = JSON.stringify({ jobId: "job_1", status: "completed", output: { url: "https://x/1.png" } })

  it("match an independent implementation of the spec's algorithm", async () => {
    expect(signWebhook("whsec_abc", 1_700_000_000, body)).toBe(await referenceSignature("whsec_abc", 1_700_000_000, body))
    expect(signWebhook("whsec_abc", 1_700_000_000, body)).toMatch(/^sha256=[0-9a-f]{64}$/)
  })

  it("verify with the tolerance, the raw body and any of the rotation signatures", () => {
    const ts = 1_700_000_000
    const headers = { "X-Service-Timestamp": String(ts), "X-Service-Signature": signatureHeader(["old", "new"], ts, body) }
    expect(verifyWebhook({ secret: "new", headers, body, nowSeconds: ts + 10 })).toEqual({ ok: true, timestamp: ts })
    expect(verifyWebhook({ secret: "old", headers, body, nowSeconds: ts + 10 }).ok).toBe(true)
    expect(verifyWebhook({ secret: "other", headers, body, nowSeconds: ts })).toEqual({ ok: false, reason: "bad_signature" })
    expect(verifyWebhook({ secret: "new", headers, body: `${body} `, nowSeconds: ts })).toEqual({ ok: false, reason: "bad_signature" })
    expect(verifyWebhook({ secret: "new", headers, body, nowSeconds: ts + 301 })).toEqual({ ok: false, reason: "stale_timestamp" })
    expect(verifyWebhook({ secret: "new", headers, body, nowSeconds: ts + 30, toleranceSeconds: 20 }).ok).toBe(false)
    expect(verifyWebhook({ secret: "new", headers: new Headers(headers), body, nowSeconds: ts }).ok).toBe(true)
    expect(verifyWebhook({ secret: "new", headers: { "x-service-signature": "sha256=00" }, body })).toEqual({ ok: false, reason: "missing_headers" })
    expect(verifyWebhook({ secret: "new", headers: { ...headers, "X-Service-Timestamp": "12abc" }, body }).ok).toBe(false)
  })

  it("signs the timestamp together with the body, so a replayed body with a new timestamp fails", () => {
    const sig = createHmac("sha256", "s").update(`100.${body}`).digest("hex")
    expect(verifyWebhook({ secret: "s", headers: { "x-service-timestamp": "200", "x-service-signature": `sha256=${sig}` }, body, nowSeconds: 200 }).ok).toBe(false)
  })
})

describe("webhook retry schedule (spec 6.1)", () => {
  it("retries after 1, 4, 16, 64 and 256 seconds, then gives up: six attempts in all", () => {
    const delays = [1, 2, 3, 4, 5, 6].map((made) => nextAttemptAt(made, 0))
    expect(delays).toEqual([1_000, 4_000, 16_000, 64_000, 256_000, undefined])
    expect(MAX_ATTEMPTS).toBe(6)
  })

  it("honours Retry-After within the schedule's bounds", () => {
    expect(nextAttemptAt(1, 0, 30_000)).toBe(30_000)
    expect(nextAttemptAt(3, 0, 2_000)).toBe(16_000)
    expect(nextAttemptAt(1, 0, 100_000_000)).toBe(256_000)
    expect(nextAttemptAt(6, 0, 1_000)).toBeUndefined()
  })

  it("reads Retry-After as seconds or an HTTP date", () => {
    expect(parseRetryAfterMs("120", 0)).toBe(120_000)
    expect(parseRetryAfterMs(new Date(90_000).toUTCString(), 0)).toBe(90_000)
    expect(parseRetryAfterMs("soon", 0)).toBeUndefined()
    expect(parseRetryAfterMs(undefined, 0)).toBeUndefined()
  })
})

describe("webhook target addresses (SSRF guard)", () => {
  const refused = [
    "127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.5.5", "172.31.255.255", "192.168.1.1", "169.254.169.254",
    "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "240.0.0.1", "192.0.2.10", "198.18.0.1", "203.0.113.9",
    "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::7f00:1", "64:ff9b::7f00:1",
    "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "2001:db8::1", "2002:7f00:1::", "2001::1", "100::1",
    "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "not-an-ip",
    // Site-local (deprecated, still routed inside some networks) and IPv4-translated (RFC 6145).
    "fec0::1", "feff::1", "::ffff:0:7f00:1", "::ffff:0:a00:1"
  ]
  for (const address of refused) {
    it(`refuses ${address}`, () => expect(isForbiddenAddress(address)).toBe(true))
  }
  for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:93.184.216.34", "172.32.0.1", "100.128.0.1"]) {
    it(`allows ${address}`, () => expect(isForbiddenAddress(address)).toBe(false))
  }
})

describe("IPv6 webhook targets: global unicast (2000::/3) only, less its special ranges", () => {
  const outsideGlobalUnicast = [
    "1::1", "4000::1", "::1:2:3:4", "5f00::1", "8000::1", "e000::1", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "4000::"
  ]
  // One address in each special range of the design notes, carrying a public IPv4 where the form embeds one.
  const specialRanges: ReadonlyArray<[string, string]> = [
    ["::/128", "::"],
    ["::1/128", "::1"],
    ["::ffff:0:0/96, a private IPv4", "::ffff:192.168.0.1"],
    ["::/96", "::808:808"],
    ["64:ff9b::/96", "64:ff9b::808:808"],
    ["64:ff9b:1::/48", "64:ff9b:1::808:808"],
    ["100::/64", "100::1"],
    ["2001::/32", "2001:0:4136:e378:8000:63bf:3fff:fdd2"],
    ["2001:db8::/32", "2001:db8:85a3::8a2e:370:7334"],
    ["2002::/16", "2002:808:808::1"],
    ["3fff::/20", "3fff:fff:ffff::1"],
    ["fc00::/7", "fdff::1"],
    ["fe80::/10", "febf::1"],
    ["fec0::/10", "feff:ffff::1"],
    ["ff00::/8", "ff0e::1"],
    ["::ffff:0:0:0/96", "::ffff:0:808:808"]
  ]
  for (const address of outsideGlobalUnicast) {
    it(`refuses ${address}, outside 2000::/3`, () => expect(isForbiddenAddress(address)).toBe(true))
  }
  for (const [range, address] of specialRanges) {
    it(`refuses ${address} (${range})`, () => expect(isForbiddenAddress(address)).toBe(true))
  }
  const globalUnicast = [
    "2606:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:82b::200e", "2400:cb00:2048:1::c629:d7a2",
    "2000::1", "3fff:ffff::1", "::ffff:8.8.8.8"
  ]
  for (const address of globalUnicast) {
    it(`allows ${address}`, () => expect(isForbiddenAddress(address)).toBe(false))
  }
})
