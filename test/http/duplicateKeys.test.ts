import { HttpApi } from "effect/http-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EngineApi } from "../../src/http/Api.js"
import { ADMIN_TOKEN, type HttpEngine, makeHttpEngine, type Reply } from "../support/httpEngine.js"

const IMAGE = "demo/image-gen/text-to-image"
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

/** A refusal in the spec's envelope naming the repeated key, at this dotted path and JSON pointer. */
const expectDuplicate = (reply: Reply, key: string, field: string, pointer: string) => {
  expect(reply.status).toBe(400)
  expect(reply.body).toMatchObject({
    success: false,
    error: { code: "VALIDATION_ERROR", details: { duplicate: field, errors: [{ path: pointer }] } }
  })
  expect(reply.body.error.message).toContain(`"${key}"`)
  expect(typeof reply.body.requestId).toBe("string")
}

describe("a JSON body naming a key twice in one object is refused and changes nothing", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  const raw = (method: string, path: string, rawBody: string, headers: Record<string, string>) =>
    engine.request(method, path, { rawBody, headers })
  const accountsNamed = async (name: string) =>
    (await engine.admin("GET", `/admin/accounts?search=${name}`)).body.accounts.filter((a: any) => a.name === name)

  it("creates no account whose credits a reader of the first key would see as 1 micro-cent", async () => {
    const reply = await raw("POST", "/admin/accounts", `{"name":"twice","creditsMicroCents":1,"creditsMicroCents":1000000000000000}`, admin)
    expectDuplicate(reply, "creditsMicroCents", "creditsMicroCents", "/creditsMicroCents")
    // Spelt with an escape, it is the same key.
    const escaped = await raw("POST", "/admin/accounts", `{"name":"twice","creditsMicroCents":1,"\\u0063reditsMicroCents":5}`, admin)
    expectDuplicate(escaped, "creditsMicroCents", "creditsMicroCents", "/creditsMicroCents")
    expect(await accountsNamed("twice")).toEqual([])
    // Once, it is taken.
    expect((await raw("POST", "/admin/accounts", `{"name":"twice","creditsMicroCents":1}`, admin)).status).toBe(201)
    expect(await accountsNamed("twice")).toHaveLength(1)
  })

  it("queues no job and charges nothing for a submit repeating a key of its input", async () => {
    const acc = await engine.account({ credits: 5_000_000 })
    const key = { authorization: `Bearer ${acc.key}` }
    const reply = await raw("POST", "/v1/jobs/submit", `{"model":"${IMAGE}","input":{"prompt":"a cat","prompt":"a dog"}}`, key)
    expectDuplicate(reply, "prompt", "input.prompt", "/input/prompt")
    expect((await acc.get("/v1/jobs")).body.jobs).toEqual([])
    expect((await acc.get("/v1/account")).body.account.balanceMicroCents).toBe(5_000_000)
    // A value that reads like a key is no repetition.
    const quoted = `{"model":"${IMAGE}","input":{"prompt":"\\"prompt\\":\\"a dog\\""}}`
    expect((await raw("POST", "/v1/jobs/submit", quoted, key)).status).toBe(200)
  })

  it("takes the same key in sibling objects: the catalog names slug, name and versions once per model", async () => {
    const catalog = (await engine.admin("GET", "/admin/catalog")).body
    expect(catalog.models.length).toBeGreaterThan(1)
    expect((await engine.admin("POST", "/admin/catalog/diff", catalog)).status).toBe(200)
  })

  describe("on every endpoint that takes a JSON body", () => {
    const endpoints: Array<{ readonly name: string; readonly method: string; readonly path: string }> = []
    HttpApi.reflect(EngineApi, {
      onGroup: () => {},
      onEndpoint: ({ endpoint }) => {
        if ([...endpoint.payload.values()].some(({ encoding }) => encoding._tag === "Json")) endpoints.push({ name: endpoint.identifier, method: endpoint.method, path: endpoint.path })
      }
    })

    it("refuses the repetition before the body's shape is checked", async () => {
      expect(endpoints.length).toBeGreaterThanOrEqual(10)
      const acc = await engine.account()
      const answers = []
      for (const { method, name, path } of endpoints) {
        const concrete = path.replace(":id", path.startsWith("/admin/keys") ? acc.keyId : acc.accountId)
        expect([name, concrete]).not.toContainEqual(expect.stringContaining(":"))
        const headers = path.startsWith("/admin") ? admin : { authorization: `Bearer ${acc.key}` }
        const reply = await raw(method, concrete, `{"x":{"y":[{"z":1,"z":2}]}}`, headers)
        answers.push([name, reply.status, reply.body.error?.details?.duplicate])
      }
      expect(answers).toEqual(endpoints.map(({ name }) => [name, 400, "x.y.0.z"]))
    })
  })
})
