import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { failDelivery, type HttpEngine, makeHttpEngine, type Reply } from "../support/httpEngine.js"

const ALICE = "alice-admin-token"

const expectError = (reply: Reply, status: number, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
}

describe("admin API: listings, updates and the audit log", () => {
  let engine: HttpEngine
  const asAlice = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    engine.request(method, path, { body, headers: { authorization: `Bearer ${ALICE}`, ...headers } })

  beforeAll(async () => {
    engine = await makeHttpEngine({}, { http: { adminTokens: { alice: ALICE } } })
  })
  afterAll(() => engine.dispose())

  /** Every page of a list, following nextCursor. */
  const allPages = async (path: string, key: string) => {
    const items: Array<any> = []
    let cursor: string | null = null
    do {
      const sep = path.includes("?") ? "&" : "?"
      const reply: Reply = await engine.admin("GET", `${path}${cursor === null ? "" : `${sep}cursor=${cursor}`}`)
      expect(reply.status).toBe(200)
      items.push(...reply.body[key])
      cursor = reply.body.hasMore ? reply.body.nextCursor : null
    } while (cursor !== null)
    return items
  }

  it("asks for an admin token on every new endpoint, and takes any named one", async () => {
    const acc = await engine.account()
    const paths = [
      "/admin/accounts",
      `/admin/accounts/${acc.accountId}/keys`,
      `/admin/accounts/${acc.accountId}/ledger`,
      "/admin/jobs",
      "/admin/jobs/job_x",
      "/admin/webhooks/deliveries",
      "/admin/audit"
    ]
    for (const path of paths) {
      expectError(await engine.request("GET", path), 401, "UNAUTHORIZED")
      expectError(await engine.request("GET", path, { headers: { authorization: `Bearer ${acc.key}` } }), 401, "INVALID_API_KEY")
    }
    expectError(await engine.request("PATCH", `/admin/accounts/${acc.accountId}`, { body: { name: "x" } }), 401, "UNAUTHORIZED")
    expect((await asAlice("GET", "/admin/accounts")).status).toBe(200)
  })

  it("lists accounts newest first without secrets, paged, and searches names and ids", async () => {
    const names = ["Zeta Films", "zeta labs", "Omega"]
    const ids: Array<string> = []
    for (const name of names) {
      ids.push((await engine.admin("POST", "/admin/accounts", { name })).body.id)
      // Accounts made in one millisecond are ordered by id: let each have a later createdAt.
      const made = Date.now()
      while (Date.now() === made) await new Promise((resolve) => setImmediate(resolve))
    }
    const first = await engine.admin("GET", "/admin/accounts?limit=2")
    expect(first.body.accounts.map((a: any) => a.name)).toEqual(["Omega", "zeta labs"])
    expect(first.body.hasMore).toBe(true)
    expect(Object.keys(first.body.accounts[0]).sort()).toEqual(
      ["allowedModels", "balanceMicroCents", "budget", "createdAt", "discounts", "fairShareWeight", "id", "maxConcurrentJobs", "name", "segments", "standardWebhooks"]
    )
    const all = await allPages("/admin/accounts?limit=2", "accounts")
    expect(all.slice(0, 3).map((a) => a.id)).toEqual([...ids].reverse())
    expect(new Set(all.map((a) => a.id)).size).toBe(all.length)
    expect((await engine.admin("GET", "/admin/accounts?search=ZETA")).body.accounts.map((a: any) => a.name)).toEqual(["zeta labs", "Zeta Films"])
    expect((await engine.admin("GET", `/admin/accounts?search=${ids[2]!.slice(4)}`)).body.accounts.map((a: any) => a.id)).toEqual([ids[2]])
    expectError(await engine.admin("GET", "/admin/accounts?limit=0"), 400, "VALIDATION_ERROR")
    expectError(await engine.admin("GET", "/admin/accounts?cursor=nope"), 400, "VALIDATION_ERROR")
    expectError(await engine.admin("GET", `/admin/accounts?search=${"x".repeat(201)}`), 400, "VALIDATION_ERROR")
  })

  it("updates an account's settings, checked as on creation, and records the change", async () => {
    const created = (await engine.admin("POST", "/admin/accounts", { name: "before", creditsMicroCents: 900, segments: ["basic"] })).body
    const reply = await asAlice("PATCH", `/admin/accounts/${created.id}`, {
      name: "after",
      maxConcurrentJobs: 12,
      segments: ["pro"],
      allowedModels: ["demo/private"],
      discounts: [{ type: "volume", percentage: 10 }]
    })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({
      id: created.id,
      name: "after",
      maxConcurrentJobs: 12,
      segments: ["pro"],
      allowedModels: ["demo/private"],
      discounts: [{ type: "volume", percentage: 10 }],
      balanceMicroCents: 900,
      webhookSecret: created.webhookSecret
    })
    expect((await engine.admin("GET", `/admin/accounts/${created.id}`)).body).toEqual(reply.body)
    // A partial update leaves the rest as it was.
    expect((await engine.admin("PATCH", `/admin/accounts/${created.id}`, { maxConcurrentJobs: 3 })).body).toMatchObject({
      name: "after",
      maxConcurrentJobs: 3,
      segments: ["pro"]
    })
    for (const body of [{}, { maxConcurrentJobs: 0 }, { maxConcurrentJobs: 2 ** 31 }, { name: "" }, { discounts: [{ type: "x", percentage: 150 }] }, {
      maxConcurentJobs: 4
    }, { creditsMicroCents: 5 }]) {
      expectError(await engine.admin("PATCH", `/admin/accounts/${created.id}`, body), 400, "VALIDATION_ERROR")
    }
    expectError(await engine.admin("PATCH", "/admin/accounts/acc_missing", { name: "x" }), 404, "NOT_FOUND")
    const audit = await engine.admin("GET", `/admin/audit?target=${created.id}&action=account.update`)
    expect(audit.body.entries).toHaveLength(2)
    expect(audit.body.entries[1]).toMatchObject({
      actor: "alice",
      action: "account.update",
      target: created.id,
      requestId: reply.headers.get("x-request-id"),
      summary: {
        changes: {
          name: { from: "before", to: "after" },
          maxConcurrentJobs: { from: 5, to: 12 },
          segments: { from: ["basic"], to: ["pro"] },
          allowedModels: { from: [], to: ["demo/private"] },
          discounts: { from: [], to: [{ type: "volume", percentage: 10 }] }
        }
      }
    })
    expect(audit.body.entries[0]).toMatchObject({ actor: "admin", summary: { changes: { maxConcurrentJobs: { from: 12, to: 3 } } } })
  })

  it("sets an account's fair-share weight on creation and update, 1 to 1000, default 1", async () => {
    const plain = (await engine.admin("POST", "/admin/accounts", { name: "plain" })).body
    expect(plain.fairShareWeight).toBe(1)
    const heavy = await engine.admin("POST", "/admin/accounts", { name: "heavy", fairShareWeight: 3 })
    expect([heavy.status, heavy.body.fairShareWeight]).toEqual([201, 3])
    expect((await engine.admin("GET", `/admin/accounts/${heavy.body.id}`)).body.fairShareWeight).toBe(3)
    const listed = await allPages("/admin/accounts?search=heavy", "accounts")
    expect(listed.find((a) => a.id === heavy.body.id)?.fairShareWeight).toBe(3)
    expect((await engine.admin("PATCH", `/admin/accounts/${plain.id}`, { fairShareWeight: 1000 })).body.fairShareWeight).toBe(1000)
    expect((await engine.admin("PATCH", `/admin/accounts/${heavy.body.id}`, { fairShareWeight: 1 })).body.fairShareWeight).toBe(1)
    for (const weight of [0, 1001, 1.5, "2"]) {
      expectError(await engine.admin("PATCH", `/admin/accounts/${plain.id}`, { fairShareWeight: weight }), 400, "VALIDATION_ERROR")
      expectError(await engine.admin("POST", "/admin/accounts", { name: "bad", fairShareWeight: weight }), 400, "VALIDATION_ERROR")
    }
    expect((await engine.admin("GET", `/admin/accounts/${plain.id}`)).body.fairShareWeight).toBe(1000)
    const audit = await engine.admin("GET", `/admin/audit?target=${plain.id}&action=account.update`)
    expect(audit.body.entries[0]).toMatchObject({ summary: { changes: { fairShareWeight: { from: 1, to: 1000 } } } })
  })

  it("lists an account's keys without their secrets", async () => {
    const acc = await engine.account({ scopes: ["submit_job"], allowedIPs: ["10.0.0.0/8"] })
    const second = await engine.admin("POST", `/admin/accounts/${acc.accountId}/keys`, { name: "second", expiresAt: "2999-01-01T00:00:00Z" })
    await engine.admin("POST", `/admin/keys/${acc.keyId}/deactivate`)
    const reply = await engine.admin("GET", `/admin/accounts/${acc.accountId}/keys`)
    expect(reply.status).toBe(200)
    // Listed by creation time, ties (same millisecond) by id: the two keys here are often made in one.
    const key = (k: { createdAt: string; id: string }) => `${k.createdAt} ${k.id}`
    const byCreation = [...reply.body.keys].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
    expect(reply.body.keys).toEqual(byCreation)
    expect(reply.body.keys).toHaveLength(2)
    expect(reply.body.keys.find((k: { id: string }) => k.id === acc.keyId)).toEqual(
      expect.objectContaining({ name: "k", scopes: ["submit_job"], allowedIPs: ["10.0.0.0/8"], active: false, expiresAt: null, hint: acc.key.slice(0, 8) })
    )
    expect(reply.body.keys.find((k: { id: string }) => k.id === second.body.id)).toEqual(
      expect.objectContaining({ name: "second", active: true, expiresAt: "2999-01-01T00:00:00.000Z" })
    )
    const text = JSON.stringify(reply.body)
    expect(text).not.toContain(acc.key)
    expect(text).not.toContain(second.body.key)
    expect(text).not.toContain("hash")
    expectError(await engine.admin("GET", "/admin/accounts/acc_missing/keys"), 404, "NOT_FOUND")
  })

  it("lists jobs across accounts with filters and pages, and shows any job", async () => {
    const a = await engine.account()
    const b = await engine.account()
    const submit = async (acc: typeof a, model: string) => (await acc.post("/v1/jobs/submit", { model, input: { prompt: "p" } })).body.jobId as string
    const start = new Date().toISOString()
    const ids = [
      await submit(a, "demo/text-gen/text-to-text"),
      await submit(b, "demo/text-gen/text-to-text"),
      await submit(a, "demo/image-gen/text-to-image")
    ]
    await a.post(`/v1/jobs/${ids[0]}/cancel`)
    const mine = (jobs: Array<any>) => jobs.map((j) => j.jobId).filter((id) => ids.includes(id))
    expect(mine(await allPages(`/admin/jobs?limit=1&createdFrom=${start}`, "jobs"))).toEqual([...ids].reverse())
    expect(mine((await engine.admin("GET", `/admin/jobs?accountId=${a.accountId}`)).body.jobs)).toEqual([ids[2], ids[0]])
    expect(mine((await engine.admin("GET", `/admin/jobs?accountId=${a.accountId}&status=cancelled`)).body.jobs)).toEqual([ids[0]])
    expect(mine((await engine.admin("GET", "/admin/jobs?model=demo/image-gen/text-to-image")).body.jobs)).toEqual([ids[2]])
    expect((await engine.admin("GET", `/admin/jobs?createdBefore=${start}&accountId=${a.accountId}`)).body.jobs).toEqual([])
    const listed = (await engine.admin("GET", `/admin/jobs?accountId=${b.accountId}`)).body.jobs[0]
    expect(listed).toMatchObject({ jobId: ids[1], accountId: b.accountId, status: "pending", model: "demo/text-gen/text-to-text", costMicroCents: expect.any(Number) })
    const detail = await engine.admin("GET", `/admin/jobs/${ids[1]}`)
    expect(detail.body).toMatchObject({ ...listed, input: { prompt: "p" }, output: null, error: null })
    expectError(await engine.admin("GET", "/admin/jobs/job_missing"), 404, "JOB_NOT_FOUND")
    expectError(await engine.admin("GET", "/admin/jobs?status=lost"), 400, "VALIDATION_ERROR")
    expectError(await engine.admin("GET", "/admin/jobs?createdFrom=yesterday"), 400, "VALIDATION_ERROR")
    expectError(await engine.admin("GET", `/admin/jobs?createdFrom=${start}&createdBefore=${start}`), 400, "VALIDATION_ERROR")
  })

  it("lists webhook deliveries across accounts by account and status", async () => {
    const a = await engine.account()
    const b = await engine.account()
    for (const acc of [a, b]) {
      await acc.post("/v1/jobs/submit", { model: "demo/text-gen/text-to-text", input: { prompt: "p" }, webhookUrl: "https://hooks.genjobs.test/x" })
    }
    while (await engine.work()) { /* finish them */ }
    const ofB = await engine.admin("GET", `/admin/webhooks/deliveries?accountId=${b.accountId}`)
    expect(ofB.body.deliveries).toEqual([expect.objectContaining({ accountId: b.accountId, status: "pending", url: "https://hooks.genjobs.test/x" })])
    const pending = await allPages("/admin/webhooks/deliveries?status=pending&limit=1", "deliveries")
    expect(pending.map((d) => d.accountId)).toEqual(expect.arrayContaining([a.accountId, b.accountId]))
    expect((await engine.admin("GET", `/admin/webhooks/deliveries?status=sent&accountId=${a.accountId}`)).body.deliveries).toEqual([])
    expectError(await engine.admin("GET", "/admin/webhooks/deliveries?status=lost"), 400, "VALIDATION_ERROR")
  })

  it("pages an account's ledger oldest first", async () => {
    const created = (await engine.admin("POST", "/admin/accounts", { name: "ledger", creditsMicroCents: 10 })).body
    for (const amount of [20, 30]) await engine.admin("POST", `/admin/accounts/${created.id}/credits`, { amountMicroCents: amount })
    const whole = await engine.admin("GET", `/admin/accounts/${created.id}/ledger`)
    expect(whole.body).toMatchObject({ hasMore: false, nextCursor: null })
    expect(whole.body.entries.map((e: any) => e.amountMicroCents)).toEqual([10, 20, 30])
    const paged = await allPages(`/admin/accounts/${created.id}/ledger?limit=1`, "entries")
    expect(paged).toEqual(whole.body.entries)
    expectError(await engine.admin("GET", "/admin/accounts/acc_missing/ledger"), 404, "NOT_FOUND")
    expectError(await engine.admin("GET", `/admin/accounts/${created.id}/ledger?limit=101`), 400, "VALIDATION_ERROR")
  })

  it("records every admin write with its actor, request and a summary without secrets", async () => {
    const created = await asAlice("POST", "/admin/accounts", { name: "audited", creditsMicroCents: 5 })
    const id = created.body.id
    const key = await asAlice("POST", `/admin/accounts/${id}/keys`, { name: "ci", scopes: ["check_status"] })
    await engine.admin("POST", `/admin/accounts/${id}/credits`, { amountMicroCents: 7 })
    const rotated = await engine.admin("POST", `/admin/accounts/${id}/webhook-secret/rotate`, { overlapSeconds: 60 })
    await engine.admin("POST", `/admin/keys/${key.body.id}/deactivate`)
    const catalog = await engine.admin("GET", "/admin/catalog")
    const replaced = await asAlice("PUT", "/admin/catalog", catalog.body)
    // A refused write changes nothing and records nothing.
    await asAlice("POST", `/admin/accounts/${id}/credits`, { amountMicroCents: -1 })

    const entries = await allPages("/admin/audit?limit=2", "entries")
    const ours = entries.filter((e) => e.target === id || e.target === key.body.id || e.requestId === replaced.headers.get("x-request-id"))
    expect(ours.map((e) => [e.actor, e.action, e.target])).toEqual([
      ["alice", "catalog.replace", "catalog"],
      ["admin", "key.deactivate", key.body.id],
      ["admin", "account.webhook_secret.rotate", id],
      ["admin", "account.credit", id],
      ["alice", "key.create", key.body.id],
      ["alice", "account.create", id]
    ])
    expect(ours.at(-1)).toMatchObject({
      requestId: created.headers.get("x-request-id"),
      summary: { name: "audited", creditsMicroCents: 5, maxConcurrentJobs: 5 },
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/)
    })
    expect(ours[4].summary).toMatchObject({ accountId: id, name: "ci", scopes: ["check_status"], hint: key.body.hint })
    expect(ours[3].summary).toEqual({ amountMicroCents: 7, balanceMicroCents: 12 })
    expect(ours[0].summary).toMatchObject({ revision: replaced.body.revision })
    const text = JSON.stringify(entries)
    for (const secret of [key.body.key, created.body.webhookSecret, rotated.body.webhookSecret, ALICE]) expect(text).not.toContain(secret)
    expect((await engine.admin("GET", "/admin/audit?actor=alice&action=key.create")).body.entries.map((e: any) => e.target)).toContain(key.body.id)
    expectError(await engine.admin("GET", "/admin/audit?action=account.delete"), 400, "VALIDATION_ERROR")
  })
})

describe("admin API: retrying deliveries of any account, and previewing a catalog", () => {
  let engine: HttpEngine
  const asAlice = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    engine.request(method, path, { body, headers: { authorization: `Bearer ${ALICE}`, ...headers } })

  beforeAll(async () => {
    engine = await makeHttpEngine({}, { http: { adminTokens: { alice: ALICE } } })
  })
  afterAll(() => engine.dispose())

  it("retries a failed delivery of any account, only a failed one, and records who did", async () => {
    const acc = await engine.account()
    const jobId = (await acc.post("/v1/jobs/submit", {
      model: "demo/text-gen/text-to-text",
      input: { prompt: "p" },
      webhookUrl: "https://hooks.genjobs.test/x"
    })).body.jobId
    while (await engine.work()) { /* finish it */ }
    const [delivery] = (await engine.admin("GET", `/admin/webhooks/deliveries?accountId=${acc.accountId}`)).body.deliveries
    const path = `/admin/webhooks/deliveries/${delivery.id}/retry`
    expectError(await engine.request("POST", path), 401, "UNAUTHORIZED")
    expectError(await engine.request("POST", path, { headers: { authorization: `Bearer ${acc.key}` } }), 401, "INVALID_API_KEY")
    const pending = await engine.admin("POST", path)
    expectError(pending, 409, "DELIVERY_NOT_RETRYABLE")
    expect(pending.body.error.details).toMatchObject({ deliveryId: delivery.id, status: "pending" })

    await failDelivery(engine, delivery.id)
    const retried = await asAlice("POST", path)
    expect(retried.status).toBe(200)
    expect(retried.body).toMatchObject({ id: delivery.id, accountId: acc.accountId, jobId, status: "pending", nextAttemptAt: expect.any(String) })
    expect(retried.body.attempts).toEqual([expect.objectContaining({ attempt: 6, statusCode: 500 })])
    // Due again: a dispatcher takes it at once.
    expect((await engine.admin("GET", `/admin/webhooks/deliveries?accountId=${acc.accountId}&status=pending`)).body.deliveries.map((d: any) => d.id))
      .toEqual([delivery.id])
    expectError(await engine.admin("POST", "/admin/webhooks/deliveries/whd_missing/retry"), 404, "NOT_FOUND")

    const entries = (await engine.admin("GET", `/admin/audit?action=delivery.retry&target=${delivery.id}`)).body.entries
    expect(entries).toEqual([expect.objectContaining({
      actor: "alice",
      action: "delivery.retry",
      target: delivery.id,
      summary: { accountId: acc.accountId, jobId },
      requestId: retried.headers.get("x-request-id")
    })])
  })

  it("previews a catalog document: the same check as a replace, then what it changes, storing nothing", async () => {
    const before = await engine.admin("GET", "/admin/catalog")
    const revision = (await engine.admin("PUT", "/admin/catalog", before.body)).body.revision
    const same = await engine.admin("POST", "/admin/catalog/diff", before.body)
    expect(same.status).toBe(200)
    const nothing = { added: [], removed: [], changed: [] }
    expect(same.body).toEqual({
      revision,
      unchanged: true,
      diff: { categories: nothing, capabilities: nothing, providers: nothing, models: nothing }
    })

    const [first, second, ...rest] = before.body.models
    const edited = {
      ...before.body,
      categories: [...before.body.categories, { id: "3d", name: "3D", description: "Shapes" }],
      models: [{ ...first, name: "Renamed" }, ...rest]
    }
    const preview = await asAlice("POST", "/admin/catalog/diff", edited)
    expect(preview.status).toBe(200)
    expect(preview.body).toEqual({
      revision,
      unchanged: false,
      diff: {
        categories: { added: ["3d"], removed: [], changed: [] },
        capabilities: nothing,
        providers: nothing,
        models: { added: [], removed: [second.slug], changed: [first.slug] }
      }
    })

    const invalid = { ...before.body, models: [{ ...first, providerId: "nobody", currentVersion: "v9" }] }
    const refused = await engine.admin("POST", "/admin/catalog/diff", invalid)
    expectError(refused, 400, "VALIDATION_ERROR")
    expect(refused.body.error.details.reasons).toEqual((await engine.admin("PUT", "/admin/catalog", invalid)).body.error.details.reasons)
    expect(refused.body.error.details.reasons.join("\n")).toMatch(/unknown providerId "nobody"/)
    expectError(await engine.admin("POST", "/admin/catalog/diff", { models: "none" }), 400, "VALIDATION_ERROR")
    expectError(await engine.request("POST", "/admin/catalog/diff", { body: edited }), 401, "UNAUTHORIZED")

    // Nothing stored, nothing recorded.
    expect((await engine.admin("GET", "/admin/catalog")).body).toEqual(before.body)
    const recorded = (await engine.admin("GET", "/admin/audit?action=catalog.replace")).body.entries
    expect(recorded.map((e: any) => e.requestId)).not.toContain(preview.headers.get("x-request-id"))
    expect(recorded[0].summary.revision).toBe(revision)
  })

  it("replaces the catalog only at the revision If-Match names; a stale one is 412 and changes nothing", async () => {
    const read = await engine.admin("GET", "/admin/catalog")
    const tag = read.headers.get("etag")
    expect(tag).toMatch(/^"\d+"$/)
    const revision = Number(JSON.parse(tag!))
    expect((await engine.admin("POST", "/admin/catalog/diff", read.body)).body.revision).toBe(revision)

    // Two operators edit the same revision: the first applies, the second is refused.
    const [first, ...rest] = read.body.models
    const mine = { ...read.body, models: [{ ...first, name: "Mine" }, ...rest] }
    const theirs = { ...read.body, models: [{ ...first, name: "Theirs" }, ...rest] }
    const applied = await asAlice("PUT", "/admin/catalog", mine, { "if-match": tag! })
    expect(applied.status).toBe(200)
    expect(applied.body.revision).toBe(revision + 1)
    expect(applied.headers.get("etag")).toBe(`"${revision + 1}"`)
    const stale = await asAlice("PUT", "/admin/catalog", theirs, { "if-match": tag! })
    expectError(stale, 412, "PRECONDITION_FAILED")
    expect(stale.body.error.details).toEqual({ revision: revision + 1, expectedRevision: revision })
    const now = await engine.admin("GET", "/admin/catalog")
    expect(now.body.models[0].name).toBe("Mine")
    expect(now.headers.get("etag")).toBe(`"${revision + 1}"`)
    const recorded = (await engine.admin("GET", "/admin/audit?action=catalog.replace")).body.entries
    expect(recorded.map((e: any) => e.requestId)).toContain(applied.headers.get("x-request-id"))
    expect(recorded.map((e: any) => e.requestId)).not.toContain(stale.headers.get("x-request-id"))

    // Without If-Match, or with *, the replace is unconditional as before; a header that names no revision is refused.
    expect((await asAlice("PUT", "/admin/catalog", read.body, { "if-match": "*" })).body.revision).toBe(revision + 2)
    expectError(await asAlice("PUT", "/admin/catalog", theirs, { "if-match": String(revision + 2) }), 400, "VALIDATION_ERROR")
    expect((await engine.admin("GET", "/admin/catalog")).body).toEqual(read.body)
  })
})
