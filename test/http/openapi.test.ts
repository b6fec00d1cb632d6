import { compileErrors, validate } from "@readme/openapi-parser"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { Ajv2020 } from "ajv/dist/2020.js"
import formatsPlugin from "ajv-formats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine, type Reply } from "../support/httpEngine.js"

/** ajv-formats ships CommonJS whose default export arrives under `.default` in ESM. */
const addFormats = ((formatsPlugin as unknown as { default?: typeof formatsPlugin }).default ?? formatsPlugin) as
  unknown as (ajv: Ajv2020) => Ajv2020

const DOCUMENT_ID = "https://genjobs.test/openapi.json"
/** The document's own keywords, so ajv keeps its strict mode for the schemas inside. */
const DOCUMENT_KEYWORDS = ["openapi", "info", "servers", "paths", "components", "security", "tags"]

/** A JSON pointer into the document as a URI ajv resolves: `/` escaped as ~1, then percent-encoded. */
const refTo = (...segments: ReadonlyArray<string>) =>
  `${DOCUMENT_ID}#/${segments.map((s) => encodeURIComponent(s.replace(/~/g, "~0").replace(/\//g, "~1"))).join("/")}`

type Doc = {
  paths: Record<string, Record<string, any>>
  components: { schemas: Record<string, unknown> }
}

describe("the OpenAPI document", () => {
  let engine: HttpEngine
  let doc: Doc
  let ajv: Ajv2020
  beforeAll(async () => {
    engine = await makeHttpEngine()
    const served = await engine.request("GET", "/v1/openapi.json")
    expect(served.status).toBe(200)
    doc = served.body
    // strictTypes only logs: Effect puts a refinement's bounds in an allOf beside the $ref that types them.
    ajv = addFormats(new Ajv2020({ allErrors: true, strictTypes: false }))
    ajv.addVocabulary(DOCUMENT_KEYWORDS)
    ajv.addSchema(structuredClone(doc), DOCUMENT_ID)
  })
  afterAll(() => engine.dispose())

  it("passes @readme/openapi-parser's validation", async () => {
    const result = await validate(structuredClone(doc) as any)
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true)
  })

  it("passes Redocly's recommended rules without errors or warnings", async () => {
    const config = await createConfig({ extends: ["recommended"] })
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "/openapi.json", config })
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([])
  })

  it("compiles every schema with ajv (no $id twice)", () => {
    expect(JSON.stringify(doc)).not.toContain('"$id"')
    const pointers: Array<Array<string>> = Object.keys(doc.components.schemas).map((name) => ["components", "schemas", name])
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        op.parameters.forEach((_: unknown, i: number) => pointers.push(["paths", path, method, "parameters", String(i), "schema"]))
        if (op.requestBody !== undefined) pointers.push(["paths", path, method, "requestBody", "content", "application/json", "schema"])
        for (const [status, response] of Object.entries<any>(op.responses)) {
          for (const type of Object.keys(response.content ?? {})) pointers.push(["paths", path, method, "responses", status, "content", type, "schema"])
        }
      }
    }
    expect(pointers.length).toBeGreaterThan(100)
    for (const pointer of pointers) expect(() => ajv.compile({ $ref: refTo(...pointer) }), pointer.join(" ")).not.toThrow()
  })

  it("declares the key schemes on every operation and servers", () => {
    expect((doc as any).servers).toEqual([{ url: "/", description: expect.any(String) }])
    expect(Object.keys((doc as any).components.securitySchemes).sort()).toEqual(["adminToken", "apiKeyHeader", "bearerKey"])
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const op of Object.values(item)) {
        const schemes = op.security.flatMap((s: object) => Object.keys(s)).sort()
        const expected = path.startsWith("/admin") ? ["adminToken"] : ["apiKeyHeader", "bearerKey"]
        expect(schemes, path).toEqual(expected)
        expect(op.summary, path).toEqual(expect.any(String))
        expect(op.description, path).toEqual(expect.any(String))
      }
    }
    expect(doc.paths["/v1/catalog/models"]!.get.security).toContainEqual({})
    expect(doc.paths["/v1/jobs"]!.get.security).not.toContainEqual({})
  })

  it("types limit as an integer and lists every error code under its status", () => {
    const limit = doc.paths["/v1/jobs"]!.get.parameters.find((p: any) => p.name === "limit")
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100 })
    const responses = doc.paths["/v1/jobs/submit"]!.post.responses
    const codes = (status: number) => (doc.components.schemas[`Error${status}`] as any).properties.error.properties.code.enum
    expect(responses["402"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error402" })
    expect(codes(402)).toEqual(["INSUFFICIENT_BALANCE", "BUDGET_EXCEEDED"])
    expect(codes(401)).toEqual(["UNAUTHORIZED", "INVALID_API_KEY", "API_KEY_INACTIVE", "API_KEY_EXPIRED"])
    expect(codes(503)).toEqual(["PUBSUB_PUBLISH_FAILED", "SERVICE_UNAVAILABLE"])
    expect(responses["429"].headers["Retry-After"]).toBeDefined()
  })

  it("lists for each operation the codes its rules raise, not every code of the API", () => {
    const described = (path: string, method: string, status: number) => doc.paths[path]![method].responses[String(status)]?.description
    expect(described("/v1/jobs/submit", "post", 402)).toBe("INSUFFICIENT_BALANCE, BUDGET_EXCEEDED")
    expect(described("/v1/jobs/submit", "post", 503)).toBe("SERVICE_UNAVAILABLE, PUBSUB_PUBLISH_FAILED")
    expect(described("/v1/jobs/{jobId}/cancel", "post", 409)).toBe("JOB_CANNOT_BE_CANCELLED")
    expect(described("/v1/jobs", "get", 402)).toBeUndefined()
    expect(described("/v1/jobs", "get", 404)).toBeUndefined()
    expect(described("/v1/uploads/presign", "post", 413)).toBe("PAYLOAD_TOO_LARGE, FILE_TOO_LARGE")
    // The admin token's check: 404 when the admin API is off, and no key states.
    expect(described("/admin/accounts", "get", 404)).toBe("NOT_FOUND")
    expect(described("/admin/accounts", "get", 401)).toBe("UNAUTHORIZED, INVALID_API_KEY")
    expect(doc.paths["/v1/jobs/{jobId}"]!.get.responses["404"].content["application/json"].schema)
      .toEqual({ $ref: "#/components/schemas/Error404" })
  })

  describe("describes what the API answers", () => {
    /** Checks one answer against the response schema of its operation and status. */
    const conforms = (method: string, template: string, reply: Reply) => {
      const op = doc.paths[template]?.[method]
      expect(op?.responses[String(reply.status)]?.content, `${method} ${template} ${reply.status} is documented`).toBeDefined()
      const check = ajv.compile({ $ref: refTo("paths", template, method, "responses", String(reply.status), "content", "application/json", "schema") })
      expect(check(reply.body), `${method} ${template}: ${JSON.stringify(check.errors)}`).toBe(true)
    }

    it("jobs: submit, get, list, estimate, cancel", async () => {
      const acc = await engine.account()
      const input = { prompt: "a fox", width: 16, height: 16 }
      const submitted = await acc.post("/v1/jobs/submit", { model: "demo/image-gen/text-to-image", input })
      conforms("post", "/v1/jobs/submit", submitted)
      conforms("get", "/v1/jobs/{jobId}", await acc.get(`/v1/jobs/${submitted.body.jobId}`))
      await engine.work()
      const done = await acc.get(`/v1/jobs/${submitted.body.jobId}`)
      expect(done.body.status).toBe("completed")
      conforms("get", "/v1/jobs/{jobId}", done)
      conforms("get", "/v1/jobs", await acc.get("/v1/jobs?limit=1"))
      conforms("get", "/admin/jobs/{jobId}", await engine.admin("GET", `/admin/jobs/${submitted.body.jobId}`))
      conforms("get", "/admin/jobs/{jobId}/logs", await engine.admin("GET", `/admin/jobs/${submitted.body.jobId}/logs`))
      conforms("get", "/admin/jobs/{jobId}/logs", await engine.admin("GET", "/admin/jobs/job_missing/logs"))
      conforms("post", "/v1/jobs/estimate", await acc.post("/v1/jobs/estimate", { model: "demo/image-gen/text-to-image", input }))
      const pending = await acc.post("/v1/jobs/submit", { model: "demo/text-gen/text-to-text", input: { prompt: "x" } })
      conforms("post", "/v1/jobs/{jobId}/cancel", await acc.post(`/v1/jobs/${pending.body.jobId}/cancel`))
    })

    it("catalog and models", async () => {
      const acc = await engine.account()
      const slug = encodeURIComponent("demo/image-gen/text-to-image")
      conforms("get", "/v1/catalog/models", await engine.request("GET", "/v1/catalog/models"))
      conforms("get", "/v1/catalog/models/{slug}", await engine.request("GET", `/v1/catalog/models/${slug}`))
      conforms("get", "/v1/catalog/providers", await engine.request("GET", "/v1/catalog/providers"))
      conforms("get", "/v1/catalog/providers/{id}", await engine.request("GET", "/v1/catalog/providers/demo"))
      conforms("get", "/v1/catalog/categories", await engine.request("GET", "/v1/catalog/categories"))
      conforms("get", "/v1/catalog/capability-groups", await engine.request("GET", "/v1/catalog/capability-groups"))
      conforms("get", "/v1/models", await acc.get("/v1/models"))
      conforms("get", "/v1/models/{modelId}", await acc.get(`/v1/models/${slug}`))
      conforms("get", "/v1/providers", await acc.get("/v1/providers"))
      conforms("get", "/v1/providers/{providerId}/models", await acc.get("/v1/providers/demo/models"))
    })

    it("uploads and the account", async () => {
      const acc = await engine.account()
      const presigned = await acc.post("/v1/uploads/presign", { filename: "cat.png", contentType: "image/png" })
      conforms("post", "/v1/uploads/presign", presigned)
      conforms("get", "/v1/uploads/{id}", await acc.get(`/v1/uploads/${presigned.body.data.fileId}`))
      conforms("get", "/v1/account", await acc.get("/v1/account"))
      conforms("get", "/v1/webhooks/deliveries", await acc.get("/v1/webhooks/deliveries"))
    })

    it("errors, in the envelope of their status", async () => {
      const acc = await engine.account({ credits: 0 })
      conforms("get", "/v1/jobs/{jobId}", await acc.get("/v1/jobs/job_missing"))
      conforms("get", "/v1/account", await engine.request("GET", "/v1/account"))
      conforms("get", "/v1/jobs", await acc.get("/v1/jobs?limit=500"))
      conforms("post", "/v1/jobs/submit", await acc.post("/v1/jobs/submit", { model: "demo/text-gen/text-to-text", input: { prompt: "x" } }))
      conforms("post", "/v1/jobs/submit", await acc.post("/v1/jobs/submit", { input: "not an object" }))
    })
  })
})
