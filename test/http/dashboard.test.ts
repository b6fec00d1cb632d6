import { createHash } from "node:crypto"
import { DEMO_PROVIDER_ID, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BASE, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

describe("the dashboard's page and files", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("serves one page that loads only this server's scripts, the import map allowed by its hash", async () => {
    const page = await engine.request("GET", "/dashboard")
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(page.headers.get("x-frame-options")).toBe("DENY")
    expect(page.headers.get("cache-control")).toBe("no-store")
    const csp = page.headers.get("content-security-policy")!
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("connect-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    const importMap = /<script type="importmap">(.*?)<\/script>/s.exec(page.body)![1]!
    expect(csp).toContain(`'sha256-${createHash("sha256").update(importMap).digest("base64")}'`)
    // Every URL is relative to the page, so any base path works.
    expect(page.body).not.toMatch(/(src|href)="\//)
    for (const target of Object.values(JSON.parse(importMap).imports) as Array<string>) expect(target).toMatch(/^\.\/dashboard\/assets\//)
  })

  it("sends /dashboard/ to /dashboard, whose relative URLs it is written for", async () => {
    const reply = await engine.request("GET", "/dashboard/")
    expect([reply.status, reply.headers.get("location")]).toEqual([308, "../dashboard"])
    expect(new URL(reply.headers.get("location")!, `${BASE}/api/dashboard/`).pathname).toBe("/api/dashboard")
  })

  it("serves every module the page imports, revalidated by ETag", async () => {
    const page = (await engine.request("GET", "/dashboard")).body as string
    const imports = JSON.parse(/<script type="importmap">(.*?)<\/script>/s.exec(page)![1]!).imports as Record<string, string>
    const pending = ["./dashboard/assets/app.js", "./dashboard/assets/dashboard.css", ...Object.values(imports)]
    const seen = new Set<string>()
    while (pending.length > 0) {
      const url = pending.pop()!
      if (seen.has(url)) continue
      seen.add(url)
      const reply = await engine.request("GET", url.slice(1))
      expect(reply.status, url).toBe(200)
      expect(reply.headers.get("x-content-type-options")).toBe("nosniff")
      for (const [, spec] of (reply.body as string).matchAll(/\bimport\s*[\w$*{}\s,]*?\s*from\s*"([^"]+)"/g)) {
        pending.push(spec!.startsWith("./") ? `./dashboard/assets/${spec!.slice(2)}` : imports[spec!] ?? `unmapped:${spec}`)
      }
    }
    expect([...seen].filter((url) => url.startsWith("unmapped:"))).toEqual([])
    expect(seen.size).toBeGreaterThan(10)

    const app = await engine.request("GET", "/dashboard/assets/app.js")
    expect(app.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
    const etag = app.headers.get("etag")!
    const again = await engine.request("GET", "/dashboard/assets/app.js", { headers: { "if-none-match": etag } })
    expect([again.status, again.body]).toEqual([304, ""])
    expect((await engine.request("GET", "/dashboard/assets/nothing.js")).status).toBe(404)
    expect((await engine.request("GET", "/dashboard/assets/..%2Froutes.ts")).status).toBe(404)
  })

  it("is off with `dashboard: false`, the admin API staying on", async () => {
    const off = await makeHttpEngine({}, { http: { dashboard: false } })
    try {
      const page = await off.request("GET", "/dashboard")
      expect([page.status, page.body.error.code]).toEqual([404, "NOT_FOUND"])
      expect((await off.request("GET", "/dashboard/assets/app.js")).status).toBe(404)
      expect((await off.admin("GET", "/admin/accounts")).status).toBe(200)
    } finally {
      await off.dispose()
    }
  })

  it("is off while the admin API is off", async () => {
    const engine = await makeEngine({
      store: memoryStore(),
      files: memoryFiles({ publicUrl: BASE }),
      providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
      workers: 0,
      webhookDispatchers: 0
    })
    try {
      const page = await engine.fetch(new Request(`${BASE}/dashboard`))
      expect(page.status).toBe(404)
      expect((await engine.fetch(new Request(`${BASE}/admin/accounts`))).status).toBe(404)
    } finally {
      await engine.dispose()
    }
  })
})
