import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine, type Reply } from "../support/httpEngine.js"

/** The spec's error envelope, 400 VALIDATION_ERROR. */
const expectRefused = (reply: Reply) => {
  expect(reply.status).toBe(400)
  expect(reply.body).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR" }, requestId: expect.any(String) })
}

describe("admin API: the standardWebhooks setting", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  const named = async (name: string) =>
    (await engine.admin("GET", `/admin/accounts?search=${name}`)).body.accounts.filter((a: { name: string }) => a.name === name)

  it("is off unless asked at creation, and shows in the account, its list item and the audit log", async () => {
    const plain = await engine.admin("POST", "/admin/accounts", { name: "std-plain" })
    expect(plain.status).toBe(201)
    expect(plain.body.standardWebhooks).toBe(false)
    const on = await engine.admin("POST", "/admin/accounts", { name: "std-on", standardWebhooks: true })
    expect(on.status).toBe(201)
    expect(on.body.standardWebhooks).toBe(true)
    expect((await engine.admin("GET", `/admin/accounts/${on.body.id}`)).body.standardWebhooks).toBe(true)
    expect((await named("std-on")).map((a: { standardWebhooks: boolean }) => a.standardWebhooks)).toEqual([true])

    const off = await engine.admin("PATCH", `/admin/accounts/${on.body.id}`, { standardWebhooks: false })
    expect(off.status).toBe(200)
    expect(off.body).toEqual({ ...on.body, standardWebhooks: false })
    expect((await engine.admin("GET", `/admin/accounts/${on.body.id}`)).body.standardWebhooks).toBe(false)
    const audit = await engine.admin("GET", `/admin/audit?target=${on.body.id}&action=account.update`)
    expect(audit.body.entries.at(-1).summary).toEqual({ changes: { standardWebhooks: { from: true, to: false } } })
  })

  it("refuses a value that is not a boolean, in the envelope, and changes nothing", async () => {
    for (const standardWebhooks of ["true", 1, null, "service+standard"]) {
      expectRefused(await engine.admin("POST", "/admin/accounts", { name: "std-refused", standardWebhooks }))
    }
    expect(await named("std-refused")).toEqual([])

    const created = await engine.admin("POST", "/admin/accounts", { name: "std-kept", standardWebhooks: true })
    for (const body of [{ standardWebhooks: "false" }, { standardWebhooks: 0 }, { standardWebhooks: null }, { name: "renamed", standardWebhooks: "no" }, {
      standardWebhook: false
    }]) {
      expectRefused(await engine.admin("PATCH", `/admin/accounts/${created.body.id}`, body))
    }
    expect((await engine.admin("GET", `/admin/accounts/${created.body.id}`)).body).toEqual(created.body)
  })

  it("is described in the OpenAPI document, for creating, patching and reading an account", async () => {
    const doc = JSON.stringify((await engine.request("GET", "/v1/openapi.json")).body)
    const described = doc.match(/"standardWebhooks":\{[^}]*"description":"[^"]*Standard Webhooks[^"]*"/g) ?? []
    expect(described.length).toBeGreaterThanOrEqual(3)
  })
})
