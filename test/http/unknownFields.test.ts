import { Context, type SchemaAST } from "effect"
import { HttpApi } from "effect/http-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EngineApi } from "../../src/http/Api.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { type HttpEngine, makeHttpEngine, type Reply } from "../support/httpEngine.js"

const IMAGE = "demo/image-gen/text-to-image"

/** A refusal in the spec's envelope naming exactly these unknown fields. */
const expectUnknown = (reply: Reply, unknown: ReadonlyArray<string>) => {
  expect(reply.status).toBe(400)
  expect(reply.body).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR", details: { unknown } } })
  expect(typeof reply.body.requestId).toBe("string")
  for (const field of unknown) expect(reply.body.error.message).toContain(field)
}

describe("unknown fields in a request body are refused and change nothing", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  const keysOf = async (accountId: string) =>
    (await engine.admin("GET", `/admin/accounts/${accountId}/keys`)).body.keys.map((k: any) => k.name)

  it("creates no key for a misspelt `scope` or `allowedIps`, which used to give an unrestricted key", async () => {
    const acc = await engine.account()
    const path = `/admin/accounts/${acc.accountId}/keys`
    expectUnknown(await engine.admin("POST", path, { name: "narrow", scope: ["check_status"] }), ["scope"])
    expectUnknown(await engine.admin("POST", path, { name: "office", allowedIps: ["10.0.0.1"] }), ["allowedIps"])
    // Every unknown field is named, not only the first.
    expectUnknown(await engine.admin("POST", path, { name: "both", scope: ["check_status"], allowedIps: ["10.0.0.1"] }), ["scope", "allowedIps"])
    expect(await keysOf(acc.accountId)).toEqual(["k"])
    // The right spelling is still taken.
    const created = await engine.admin("POST", path, { name: "narrow", scopes: ["check_status"], allowedIPs: ["10.0.0.1"] })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ scopes: ["check_status"], allowedIPs: ["10.0.0.1"] })
    expect(await keysOf(acc.accountId)).toEqual(["k", "narrow"])
  })

  it("creates no account with an unknown field, top-level or nested", async () => {
    const before = (await engine.admin("GET", "/admin/accounts?search=typo")).body.accounts
    expectUnknown(await engine.admin("POST", "/admin/accounts", { name: "typo", credits: 5 }), ["credits"])
    expectUnknown(
      await engine.admin("POST", "/admin/accounts", { name: "typo", discounts: [{ type: "partner", percentage: 10, model: "x" }] }),
      ["discounts.0.model"]
    )
    expect((await engine.admin("GET", "/admin/accounts?search=typo")).body.accounts).toEqual(before)
  })

  it("names an unknown field beside the other problems of the body", async () => {
    const acc = await engine.account()
    const reply = await engine.admin("PATCH", `/admin/accounts/${acc.accountId}`, { maxConcurrentJobs: 0, maxConcurentJobs: 4 })
    expectUnknown(reply, ["maxConcurentJobs"])
    expect(reply.body.error.details.errors.map((e: any) => e.path).sort()).toEqual(["/maxConcurentJobs", "/maxConcurrentJobs"])
  })

  it("refuses unknown fields on credits, webhook secret rotation and the catalog, nested ones too", async () => {
    const acc = await engine.account({ credits: 1_000 })
    expectUnknown(await engine.admin("POST", `/admin/accounts/${acc.accountId}/credits`, { amountMicroCents: 5, note: "x" }), ["note"])
    expect((await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.balanceMicroCents).toBe(1_000)
    const secret = (await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.webhookSecret
    expectUnknown(await engine.admin("POST", `/admin/accounts/${acc.accountId}/webhook-secret/rotate`, { overlap: 10 }), ["overlap"])
    expect((await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.webhookSecret).toBe(secret)

    const revision = (await engine.admin("GET", "/admin/catalog")).headers.get("etag")
    const catalog = demoCatalog()
    catalog.models[0]!.versions[0].pricng = { baseCredits: 0 }
    expectUnknown(await engine.admin("PUT", "/admin/catalog", catalog), ["models.0.versions.0.pricng"])
    expectUnknown(await engine.admin("POST", "/admin/catalog/diff", catalog), ["models.0.versions.0.pricng"])
    expect((await engine.admin("GET", "/admin/catalog")).headers.get("etag")).toBe(revision)
  })

  it("queues no job and charges nothing for a submit with `webhookURL`", async () => {
    const acc = await engine.account({ credits: 5_000_000 })
    const reply = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "a cat" }, webhookURL: "https://receiver.genjobs.test/hook" })
    expectUnknown(reply, ["webhookURL"])
    expect((await acc.get("/v1/jobs")).body.jobs).toEqual([])
    expect((await acc.get("/v1/account")).body.account.balanceMicroCents).toBe(5_000_000)
  })

  it("leaves a job's input to its model's schema: its fields are not refused here", async () => {
    const acc = await engine.account()
    // `width` is the image model's own field, unknown to the body's schema.
    const accepted = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "a cat", width: 64 }, webhookUrl: "https://receiver.genjobs.test/hook" })
    expect(accepted.status).toBe(200)
    const refused = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "a cat", widht: 64 } })
    expect(refused.body.error.code).toBe("INVALID_INPUT")
    expect(refused.body.error.details.unknown).toBeUndefined()
  })

  it("refuses unknown fields on estimate and presign", async () => {
    const acc = await engine.account()
    expectUnknown(await acc.post("/v1/jobs/estimate", { model: IMAGE, input: { prompt: "x" }, discount: "all" }), ["discount"])
    expect((await acc.post("/v1/jobs/estimate", { model: IMAGE, input: { prompt: "x" } })).status).toBe(200)
    expectUnknown(await acc.post("/v1/uploads/presign", { filename: "cat.png", contentType: "image/png", mimeType: "image/png" }), ["mimeType"])
    expect((await acc.post("/v1/uploads/presign", { filename: "cat.png", contentType: "image/png" })).status).toBe(200)
  })
})

describe("every JSON body of the API", () => {
  const payloads: Array<readonly [string, SchemaAST.ParseOptions | undefined]> = []
  HttpApi.reflect(EngineApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, mergedAnnotations }) => {
      if (![...endpoint.payload.values()].some(({ encoding }) => encoding._tag === "Json")) return
      // What its body is decoded with: the options for bodies if set at any level, else the general ones.
      const options = Context.getOrUndefined(mergedAnnotations, HttpApi.PayloadParseOptions) ??
        Context.getOrUndefined(mergedAnnotations, HttpApi.ParseOptions)
      payloads.push([endpoint.identifier, options])
    }
  })

  it("is decoded refusing unknown fields", () => {
    expect(payloads.length).toBeGreaterThanOrEqual(10)
    for (const [name, options] of payloads) {
      expect([name, options?.onExcessProperty]).toEqual([name, "error"])
    }
  })

  it("says so in the OpenAPI document: additionalProperties false on every object of fixed fields", async () => {
    const engine = await makeHttpEngine()
    try {
      const doc = (await engine.request("GET", "/v1/openapi.json")).body
      const open: Array<string> = []
      const visit = (schema: any, at: string): void => {
        if (Array.isArray(schema)) return schema.forEach((s, i) => visit(s, `${at}/${i}`))
        if (typeof schema !== "object" || schema === null) return
        if (schema.type === "object" && Object.keys(schema.properties ?? {}).length > 0 && schema.additionalProperties !== false) open.push(at)
        for (const [key, value] of Object.entries(schema)) visit(value, `${at}/${key}`)
      }
      let bodies = 0
      for (const [path, item] of Object.entries<any>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(item)) {
          const schema = op.requestBody?.content?.["application/json"]?.schema
          if (schema === undefined) continue
          bodies++
          visit(schema, `${method} ${path}`)
        }
      }
      expect(bodies).toBe(payloads.length)
      expect(open).toEqual([])
    } finally {
      await engine.dispose()
    }
  })
})
