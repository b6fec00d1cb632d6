import { Layer, References } from "effect"
import { makeDemoProvider, makeEngine, type StorePorts } from "genjobs"
import { memoryFiles } from "genjobs/memory"
import { BENCH_ACCOUNT, benchCatalog } from "../catalog.js"

const ADMIN = "bench-admin-token-0123456789abcdef"

/**
 * The engine on `store`, called through its web handler in-process (no network, no workers, no
 * dispatchers), with the bench catalog and one account: `call` sends one request (a string body
 * as it is, anything else as JSON) and stops the figure on anything but 2xx; `key` is the
 * account's API key.
 */
export const handlerEngine = async (store: Layer.Layer<StorePorts, unknown>) => {
  const engine = await makeEngine({
    store,
    files: memoryFiles({ publicUrl: "http://bench" }),
    providers: { demo: makeDemoProvider() },
    http: { adminToken: ADMIN },
    workers: 0,
    webhookDispatchers: 0,
    uploadSweeper: false,
    observability: Layer.succeed(References.MinimumLogLevel, "Warn")
  })
  const call = async (method: string, path: string, auth: string, body?: unknown) => {
    const response = await engine.fetch(new Request(`http://bench${path}`, {
      method,
      headers: { authorization: `Bearer ${auth}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
    }))
    const text = await response.text()
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`)
    return JSON.parse(text) as Record<string, any>
  }
  try {
    await call("PUT", "/admin/catalog", ADMIN, benchCatalog("demo"))
    const account = await call("POST", "/admin/accounts", ADMIN, { name: "bench", ...BENCH_ACCOUNT })
    const key = String((await call("POST", `/admin/accounts/${account["id"]}/keys`, ADMIN, { name: "k" }))["key"])
    return { engine, call, key }
  } catch (error) {
    await engine.dispose()
    throw error
  }
}
