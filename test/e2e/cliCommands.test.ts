import * as Effect from "effect/Effect"
import { DEMO_PROVIDER_ID, type Engine, makeDemoProvider, makeEngine } from "genjobs"
import { genjobsNode } from "genjobs/http"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { layerLogger } from "genjobs/observability"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as accounts from "../../apps/cli/accounts.js"
import { CliIo } from "../../apps/cli/io.js"
import { dollars } from "../../apps/cli/output.js"
import * as keys from "../../apps/cli/keys.js"
import { spend } from "../../apps/cli/spend.js"
import { demoCatalog } from "../support/demoCatalog.js"

const ADMIN = "cli-commands-admin-token"

/**
 * The CLI's budget and spend commands run in this process, as functions, against an engine on a
 * port: what they send and print, without a process per command (test/e2e/cli.test.ts runs the
 * built binary).
 */
describe("genjobs budgets and spend, the commands in-process", () => {
  let engine: Engine
  let server: Server
  let connection: { url: string; "admin-token": string }

  beforeAll(async () => {
    server = createServer().listen(0, "127.0.0.1")
    await new Promise((resolve) => server.once("listening", resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    engine = await makeEngine({
      store: memoryStore(),
      files: memoryFiles({ publicUrl: url }),
      providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
      http: { adminToken: ADMIN },
      observability: layerLogger({ level: "error", write: () => undefined })
    })
    server.on("request", genjobsNode(engine))
    connection = { url, "admin-token": ADMIN }
    const response = await fetch(`${url}/admin/catalog`, {
      method: "PUT",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify(demoCatalog())
    })
    expect(response.status).toBe(200)
  })

  afterAll(async () => {
    server?.closeAllConnections()
    server?.close()
    await engine?.dispose()
  })

  /**
   * Runs a command with buffers for its streams; answers what it printed on stdout and stderr,
   * and whether it failed.
   */
  const run = async (program: Effect.Effect<void, unknown, CliIo>) => {
    const printed = { stdout: "", stderr: "" }
    const io = { env: {}, stdout: (text: string) => void (printed.stdout += text), stderr: (text: string) => void (printed.stderr += text) }
    const exit = await Effect.runPromiseExit(Effect.provideService(program, CliIo, io))
    return { failed: exit._tag === "Failure", stdout: printed.stdout.replace(/\n$/, ""), stderr: printed.stderr.replace(/\n$/, "") }
  }
  const json = async (program: Effect.Effect<void, unknown, CliIo>) => {
    const result = await run(program)
    expect(result.failed, result.stderr).toBe(false)
    return JSON.parse(result.stdout)
  }

  const accountCreate = (name: string, budget?: string) =>
    accounts.create({
      args: [],
      options: { ...connection, json: true, name, credits: 10_000_000, "max-concurrent-jobs": 10, segment: [], "allow-model": [], budget }
    })
  const keyCreate = (accountId: string, budget?: string, json = true) =>
    keys.create({ args: [accountId], options: { ...connection, json, name: "reseller", scope: [], "allow-ip": [], "expires-at": undefined, budget } })

  it("sets budgets at creation, changes and removes them, and refuses a malformed one before sending anything", async () => {
    const account = await json(accountCreate("Budgeted", "5000000/month"))
    expect(account.budget).toEqual({ limitMicroCents: 5_000_000, period: "month" })

    const created = await run(keyCreate(account.id, "20000/day", false))
    expect(created.stdout).toMatch(/^budget: +\$0\.02 per day \(20000 micro-cents\)$/m)
    const [key] = (await (await fetch(`${connection.url}/admin/accounts/${account.id}/keys`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()).keys
    expect(key.budget).toEqual({ limitMicroCents: 20_000, period: "day" })

    const changed = await json(keys.update({ args: [key.id], options: { ...connection, json: true, budget: "0/total" } }))
    expect(changed.budget).toEqual({ limitMicroCents: 0, period: "total" })
    expect((await json(keys.update({ args: [key.id], options: { ...connection, json: true, budget: "none" } }))).budget).toBeNull()

    const updated = await run(accounts.update({
      args: [account.id],
      options: { ...connection, json: false, name: undefined, "max-concurrent-jobs": undefined, budget: "250000/day" }
    }))
    expect(updated.stdout).toMatch(/^budget: +\$0\.25 per day \(250000 micro-cents\)$/m)
    expect(updated.stdout).toMatch(/^name: +Budgeted$/m)

    for (const wrong of ["5/week", "-5/day", "1.5/day", "5000000"]) {
      const refused = await run(accounts.update({
        args: [account.id],
        options: { ...connection, json: true, name: "Renamed", "max-concurrent-jobs": undefined, budget: wrong }
      }))
      expect(refused.failed).toBe(true)
      expect(JSON.parse(refused.stderr).error).toMatchObject({ code: "USAGE", message: expect.stringContaining(`not "${wrong}"`) })
    }
    const nothing = await run(accounts.update({ args: [account.id], options: { ...connection, json: true, name: undefined, "max-concurrent-jobs": undefined, budget: undefined } }))
    expect(JSON.parse(nothing.stderr).error.code).toBe("USAGE")
    const stored = await (await fetch(`${connection.url}/admin/accounts/${account.id}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()
    expect([stored.name, stored.budget]).toEqual(["Budgeted", { limitMicroCents: 250_000, period: "day" }])
  })

  it("spend prints a row per group with the charges less refunds, and the total", async () => {
    const account = await json(accountCreate("Spender"))
    const key = await json(keyCreate(account.id))
    const submit = async (model: string, input: Record<string, unknown>) => {
      const response = await fetch(`${connection.url}/v1/jobs/submit`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model, input })
      })
      expect(response.status).toBe(200)
      return (await response.json()).jobId as string
    }
    const text = "demo/text-gen/text-to-text"
    const audio = "demo/audio-gen/text-to-audio"
    const ids = [await submit(text, { prompt: "a" }), await submit(text, { prompt: "b" }), await submit(audio, { prompt: "c" })]
    const costs = await Promise.all(ids.map(async (id) =>
      (await (await fetch(`${connection.url}/admin/jobs/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()).costMicroCents as number
    ))
    const [a, b, c] = costs as [number, number, number]

    const printed = await run(spend({ args: [], options: { ...connection, json: false, "group-by": "model", account: account.id, from: undefined, to: undefined } }))
    expect(printed.failed, printed.stderr).toBe(false)
    const lines = printed.stdout.split("\n")
    expect(lines[0]).toMatch(/^MODEL +SPENT +CHARGED +REFUNDED +JOBS +FAILED +CANCELLED$/)
    expect(lines.slice(1, 3).map((l) => l.split(/ {2,}/))).toEqual([
      [audio, dollars(c), dollars(c), "$0.00", "1", "0", "0"],
      [text, dollars(a + b), dollars(a + b), "$0.00", "2", "0", "0"]
    ])
    expect(lines[3]).toMatch(new RegExp(`^\\${dollars(a + b + c)} spent from \\S+Z to \\S+Z$`))

    const asJson = await json(spend({ args: [], options: { ...connection, json: true, "group-by": "key", account: account.id, from: undefined, to: undefined } }))
    expect(asJson.groups).toEqual([expect.objectContaining({ key: key.id, spentMicroCents: a + b + c, jobs: 3 })])
  })
})
