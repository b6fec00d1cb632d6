import { Webhook } from "standardwebhooks"
import { describe, expect, it } from "vitest"
import { verifyWebhook as verifyInBrowser } from "../../src/client/verifyWebhook.js"
import { standardHeaders, standardSignature } from "../../src/domain/standardWebhook.js"
import { signatureHeader, verifyWebhook } from "../../src/domain/webhookSignature.js"

const BODY = `{"jobId":"job_1","status":"completed"}`

describe("Standard Webhooks signing", () => {
  it("matches the standard's own example (key: the base64 part of its whsec_ secret)", () => {
    const key = Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64")
    expect(standardSignature(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, `{"test": 2432232314}`))
      .toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
  })

  // Computed with Python's hmac: base64(HMAC-SHA256(b"whsec_test", b'whd_0001.1763822400.' + body)).
  it("keys with every byte of the account's secret, as X-Service-Signature does", () => {
    expect(standardSignature("whsec_test", "whd_0001", 1763822400, BODY)).toBe("v1,t5nXkWpSdbErmnfB5um4YmwleZBptI6bkNuJgadetOM=")
  })

  it("lists one signature per secret, space-separated, during a rotation", () => {
    expect(standardHeaders(["whsec_test", "whsec_old"], "whd_0001", 1763822400, BODY)).toEqual({
      "webhook-id": "whd_0001",
      "webhook-timestamp": "1763822400",
      "webhook-signature": "v1,t5nXkWpSdbErmnfB5um4YmwleZBptI6bkNuJgadetOM= v1,2tE2ah1GZKQ3kVsRq0+ZXjymQk7yDQh6VAWUnjWrL/Q="
    })
  })
})

describe("receivers verifying the standard headers", () => {
  const secret = "whsec_Zm9vYmFyLWJhei1xdXV4LTAxMjM0NTY3ODk-_w"
  const now = Math.floor(Date.now() / 1000)
  const headersFor = (secrets: ReadonlyArray<string>, id = "whd_abc", timestamp = now) => ({
    "x-service-timestamp": String(timestamp),
    "x-service-signature": signatureHeader(secrets, timestamp, BODY),
    ...standardHeaders(secrets, id, timestamp, BODY)
  })

  it("the standardwebhooks package accepts them with the secret as raw bytes, or as whsec_ + base64 of them", () => {
    const headers = headersFor([secret])
    expect(new Webhook(secret, { format: "raw" }).verify(BODY, headers)).toEqual(JSON.parse(BODY))
    expect(new Webhook(`whsec_${Buffer.from(secret).toString("base64")}`).verify(BODY, headers)).toEqual(JSON.parse(BODY))
    expect(() => new Webhook("whsec_other", { format: "raw" }).verify(BODY, headers)).toThrow(/No matching signature/)
    expect(() => new Webhook(secret, { format: "raw" }).verify(`${BODY} `, headers)).toThrow(/No matching signature/)
  })

  it("the package accepts either secret during a rotation", () => {
    const headers = headersFor(["whsec_new", secret])
    expect(new Webhook(secret, { format: "raw" }).verify(BODY, headers)).toEqual(JSON.parse(BODY))
    expect(new Webhook("whsec_new", { format: "raw" }).verify(BODY, headers)).toEqual(JSON.parse(BODY))
  })

  for (const [name, verify] of [["node:crypto", verifyWebhook], ["genjobs/client (WebCrypto)", verifyInBrowser]] as const) {
    describe(`verifyWebhook of ${name} with standard: true`, () => {
      it("accepts both signatures and returns the signed webhook-id", async () => {
        expect(await verify({ secret, headers: headersFor(["whsec_new", secret]), body: BODY, standard: true }))
          .toEqual({ ok: true, timestamp: now, webhookId: "whd_abc" })
      })

      it("refuses a webhook-id changed on the way, which X-Service-Signature alone does not cover", async () => {
        const headers = { ...headersFor([secret]), "webhook-id": "whd_other" }
        expect(await verify({ secret, headers, body: BODY })).toEqual({ ok: true, timestamp: now })
        expect(await verify({ secret, headers, body: BODY, standard: true })).toEqual({ ok: false, reason: "bad_signature" })
      })

      it("refuses missing, stale or unversioned standard headers", async () => {
        const { "webhook-signature": _, ...withoutSignature } = headersFor([secret])
        expect(await verify({ secret, headers: withoutSignature, body: BODY, standard: true })).toEqual({ ok: false, reason: "missing_headers" })
        const stale = { ...headersFor([secret]), ...standardHeaders([secret], "whd_abc", now - 301, BODY) }
        expect(await verify({ secret, headers: stale, body: BODY, standard: true })).toEqual({ ok: false, reason: "stale_timestamp" })
        const headers = headersFor([secret])
        const v2 = { ...headers, "webhook-signature": headers["webhook-signature"].replace("v1,", "v2,") }
        expect(await verify({ secret, headers: v2, body: BODY, standard: true })).toEqual({ ok: false, reason: "bad_signature" })
      })

      it("checks X-Service-Signature first, whatever the standard headers say", async () => {
        const headers = { ...headersFor([secret]), "x-service-signature": signatureHeader(["whsec_other"], now, BODY) }
        expect(await verify({ secret, headers, body: BODY, standard: true })).toEqual({ ok: false, reason: "bad_signature" })
      })
    })
  }
})
