import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../../apps/cli/run.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { freePort, type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"

const TOKEN = "cli-test-admin-token-alice"
const KEY_PATTERN = /gjk_[A-Za-z0-9_-]{43}/

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * The CLI in this process, from source, as the bin runs it (apps/cli/main.ts calls the same
 * runCli with the process's own): only the given environment, buffers for its streams, and no
 * terminal to ask on unless `ask` answers. test/e2e/cli.test.ts runs the built bin as a process.
 */
const cli = async (args: ReadonlyArray<string>, env: Record<string, string> = {}, ask?: (question: string) => Promise<string>): Promise<Run> => {
  let stdout = ""
  let stderr = ""
  const code = await runCli(args, env, { stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text), ask })
  return { code, stdout, stderr }
}

/** The server is a process of its own, from source (tsx), started once: the thing under test. */
const SLOW = { timeout: 120_000 }
const SOURCE_SERVER = ["--conditions=genjobs-source", "--import", "tsx"]

describe("the genjobs CLI against the bundled server", SLOW, () => {
  const dataDir = tempDataDir()
  let server: RunningServer
  let env: Record<string, string>
  let demoKey: string
  /** The CLI with the server's URL and the admin token in the environment. */
  const run = (...args: Array<string>) => cli(args, env)
  const json = async (...args: Array<string>) => {
    const result = await run(...args, "--json")
    expect(result, result.stderr).toMatchObject({ code: 0 })
    return JSON.parse(result.stdout)
  }
  /** The error a failed command printed, in JSON mode. */
  const failure = async (...args: Array<string>) => {
    const result = await run(...args, "--json")
    expect(result.code).toBe(1)
    return JSON.parse(result.stderr).error
  }

  beforeAll(async () => {
    server = await startServer({ DATA_DIR: dataDir, ADMIN_TOKENS: `alice:${TOKEN}`, WORKER_CONCURRENCY: "1" }, SOURCE_SERVER, "apps/server/main.ts")
    env = { GENJOBS_URL: server.url, GENJOBS_ADMIN_TOKEN: TOKEN }
    demoKey = KEY_PATTERN.exec(server.output)![0]
  })
  afterAll(async () => {
    await server.stop("SIGKILL")
  })

  it("accounts: create, list and credit, as tables and as JSON", async () => {
    const created = await json("accounts", "create", "--name", "Acme Films", "--credits", "2500000", "--segment", "pro", "--segment", "beta")
    expect(created).toMatchObject({ name: "Acme Films", balanceMicroCents: 2_500_000, segments: ["pro", "beta"], maxConcurrentJobs: 5 })
    const human = await run("accounts", "create", "--name", "Globex", "--max-concurrent-jobs", "9")
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/^Created account acc_\S+\n/)
    expect(human.stdout).toMatch(/max concurrent jobs: 9/)

    const table = await run("accounts", "list", "--search", "acme")
    expect(table.code).toBe(0)
    const lines = table.stdout.trim().split("\n")
    expect(lines[0]).toMatch(/^ID\s+NAME\s+BALANCE\s+MAX JOBS\s+SEGMENTS\s+CREATED$/)
    expect(lines.slice(1)).toEqual([expect.stringMatching(new RegExp(`^${created.id}\\s+Acme Films\\s+\\$2\\.50\\s+5\\s+pro, beta\\s+`))])
    const listed = await json("accounts", "list", "--limit", "1")
    expect(listed).toMatchObject({ hasMore: true, accounts: [expect.objectContaining({ name: "Globex" })] })
    const all = await run("accounts", "list", "--all")
    expect(all.stdout).toMatch(/\n3 accounts\n$/)
    expect(all.stderr).toContain("… 3 accounts")
    expect((await json("accounts", "list", "--all")).accounts.map((a: any) => a.name)).toEqual(["Globex", "Acme Films", "Demo account"])

    expect(await json("accounts", "credit", created.id, "--micro-cents", "500000")).toMatchObject({ balanceMicroCents: 3_000_000 })
    const credited = await run("accounts", "credit", created.id, "--micro-cents", "10000")
    expect(credited.stdout).toBe("Credited $0.01; balance $3.01\n")

    expect(await failure("accounts", "credit", "acc_missing", "--micro-cents", "5")).toMatchObject({ code: "NOT_FOUND", status: 404 })
    const missing = await run("accounts", "credit", "acc_missing", "--micro-cents", "5")
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/^error: NOT_FOUND: No account "acc_missing" \(request req_\S+\)\n$/)
    expect(await failure("accounts", "credit", created.id, "--micro-cents", "-3")).toMatchObject({ code: "VALIDATION_ERROR" })
  })

  it("keys: a created key works until it is deactivated; its secret is printed once", async () => {
    const account = await json("accounts", "create", "--name", "Keys")
    const key = await json("keys", "create", account.id, "--name", "backend", "--scope", "check_status", "--scope", "list_models")
    expect(key).toMatchObject({ accountId: account.id, name: "backend", scopes: ["check_status", "list_models"], active: true })
    expect(key.key).toMatch(KEY_PATTERN)
    const me = await fetch(`${server.url}/v1/account`, { headers: { authorization: `Bearer ${key.key}` } })
    expect(me.status).toBe(200)

    const human = await run("keys", "create", account.id, "--name", "ops", "--allow-ip", "10.0.0.0/8")
    expect(human.stdout).toMatch(/allowed IPs: 10\.0\.0\.0\/8/)
    expect(human.stdout).toMatch(/shown only this once[\s\S]*\n {4}gjk_/)
    expect(await failure("keys", "create", account.id, "--name", "bad", "--allow-ip", "not-an-ip")).toMatchObject({ code: "VALIDATION_ERROR" })

    const off = await run("keys", "deactivate", key.id)
    expect(off.stdout).toBe(`Deactivated key ${key.id} (${key.hint}) of account ${account.id}\n`)
    const refused = await fetch(`${server.url}/v1/account`, { headers: { authorization: `Bearer ${key.key}` } })
    expect((await refused.json()).error.code).toBe("API_KEY_INACTIVE")
    expect(await json("keys", "deactivate", key.id)).toMatchObject({ id: key.id, active: false })
    expect(await failure("keys", "deactivate", "key_missing")).toMatchObject({ code: "NOT_FOUND" })
  })

  it("catalog: validate locally, export, and apply with a diff that asks first", async () => {
    const exported = join(dataDir, "catalog.json")
    const wrote = await run("catalog", "export", "--output", exported)
    expect(wrote.stdout).toMatch(/^Wrote the catalog \(\d+ models\) to /)
    const doc = JSON.parse(readFileSync(exported, "utf8"))
    expect(JSON.parse((await run("catalog", "export")).stdout)).toEqual(doc)

    const valid = await run("catalog", "validate", exported)
    expect(valid.stdout).toMatch(new RegExp(`is a valid catalog: ${doc.models.length} models`))
    // Without a server: no URL or token is needed to validate.
    expect(await cli(["catalog", "validate", exported, "--json"], { GENJOBS_URL: "http://127.0.0.1:1" })).toMatchObject({ code: 0 })
    const broken = join(dataDir, "broken.json")
    writeFileSync(broken, JSON.stringify({ ...doc, models: [{ ...doc.models[0], providerId: "nobody" }] }))
    const invalid = await run("catalog", "validate", broken)
    expect(invalid.code).toBe(1)
    expect(invalid.stderr).toMatch(/VALIDATION_ERROR[\s\S]*unknown providerId "nobody"/)
    expect((await failure("catalog", "validate", broken)).details.reasons.join("\n")).toMatch(/unknown providerId/)
    // A wrong shape: one line per field by its path, the same from validate (no server) as from apply (the server's).
    const shapeless = join(dataDir, "shapeless.json")
    const { slug: _slug, ...noSlug } = doc.models[0]
    writeFileSync(shapeless, JSON.stringify({ ...doc, models: [noSlug] }))
    const reasons = (result: Run) => result.stderr.split("\n").filter((line) => line.startsWith("  - "))
    const local = await run("catalog", "validate", shapeless)
    expect([local.code, reasons(local)]).toEqual([1, ["  - /models/0/slug: is missing"]])
    const remote = await run("catalog", "apply", shapeless, "--yes")
    expect([remote.code, reasons(remote)]).toEqual([1, reasons(local)])

    const changed = join(dataDir, "changed.json")
    const [first, ...rest] = doc.models
    writeFileSync(changed, JSON.stringify({ ...doc, models: [{ ...first, name: "Renamed" }, ...rest.slice(1)] }))
    // No terminal to ask on and no --yes: nothing changes.
    const unasked = await run("catalog", "apply", changed)
    expect(unasked.code).toBe(1)
    expect(unasked.stderr).toMatch(/1 removed, 1 changed[\s\S]*- model \S+[\s\S]*~ model \S+[\s\S]*CONFIRMATION_REQUIRED/)
    expect(JSON.parse((await run("catalog", "export")).stdout)).toEqual(doc)
    // On a terminal it asks; anything but yes changes nothing.
    const questions: Array<string> = []
    const declined = await cli(["catalog", "apply", changed], env, async (question) => (questions.push(question), "n"))
    expect([declined.code, questions]).toEqual([1, ["Apply these changes? [y/N] "]])
    expect(declined.stderr).toMatch(/CANCELLED: Not applied/)
    expect(JSON.parse((await run("catalog", "export")).stdout)).toEqual(doc)
    const applied = await run("catalog", "apply", changed, "--yes")
    expect(applied.code).toBe(0)
    expect(applied.stderr).toContain("Applying …")
    expect(applied.stdout).toMatch(/^Applied: revision \d+, \d+ models \(0 added, 1 removed, 1 changed\)\n$/)
    expect(JSON.parse((await run("catalog", "export")).stdout).models[0].name).toBe("Renamed")
    expect(await json("catalog", "apply", changed, "--yes")).toMatchObject({ applied: false })
    expect(await json("catalog", "apply", exported, "--yes")).toMatchObject({ applied: true, diff: { models: { added: [rest[0].slug] } } })
  })

  it("jobs: list across accounts with filters and every page, and get one", async () => {
    const submit = async (prompt: string) => {
      const reply = await fetch(`${server.url}/v1/jobs/submit`, {
        method: "POST",
        headers: { authorization: `Bearer ${demoKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "demo/text-gen/text-to-text", input: { prompt } })
      })
      return (await reply.json()).jobId as string
    }
    const ids = [await submit("one"), await submit("two")]
    const deadline = Date.now() + 20_000
    while ((await json("jobs", "list", "--status", "completed")).jobs.length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200))
    }
    const page = await json("jobs", "list", "--limit", "1", "--model", "demo/text-gen/text-to-text")
    expect(page).toMatchObject({ hasMore: true, jobs: [expect.objectContaining({ jobId: ids[1], status: "completed" })] })
    const every = await run("jobs", "list", "--all", "--status", "completed")
    expect(every.stdout).toMatch(new RegExp(`^JOB ID\\s+ACCOUNT\\s+MODEL\\s+STATUS\\s+COST\\s+CREATED\\n${ids[1]}\\s+acc_\\S+\\s+demo/text-gen/text-to-text\\s+completed`))
    expect(every.stdout).toMatch(/\n2 jobs\n$/)
    expect(every.stderr).toContain("… 2 jobs")
    expect((await json("jobs", "list", "--since", "2999-01-01T00:00:00Z")).jobs).toEqual([])

    const detail = await json("jobs", "get", ids[0]!)
    expect(detail).toMatchObject({ jobId: ids[0], status: "completed", input: { prompt: "one" }, outputs: [expect.objectContaining({ type: "text" })] })
    const human = await run("jobs", "get", ids[0]!)
    expect(human.stdout).toMatch(/status:\s+completed \(100%\)/)
    expect(human.stdout).toMatch(/output 1:\s+text http/)
    expect(await failure("jobs", "get", "job_missing")).toMatchObject({ code: "JOB_NOT_FOUND", status: 404 })
    expect(await failure("jobs", "list", "--since", "yesterday")).toMatchObject({ code: "VALIDATION_ERROR" })
  })

  it("says what is wrong with the connection, and never prints the admin token", async () => {
    const noToken = await cli(["accounts", "list"], { GENJOBS_URL: server.url, GENJOBS_ADMIN_TOKEN: "" })
    expect(noToken.code).toBe(1)
    expect(noToken.stderr).toMatch(/ADMIN_TOKEN_MISSING/)
    const wrong = await cli(["accounts", "list", "--admin-token", "not-the-token", "--url", server.url])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toMatch(/^error: INVALID_API_KEY: /)
    expect(wrong.stdout + wrong.stderr).not.toContain("not-the-token")
    const port = await freePort()
    const down = await cli(["jobs", "list", "--json"], { GENJOBS_URL: `http://127.0.0.1:${port}`, GENJOBS_ADMIN_TOKEN: TOKEN })
    expect(down.code).toBe(1)
    expect(JSON.parse(down.stderr).error).toMatchObject({ code: "CONNECTION_FAILED" })
    const flagged = await cli(["accounts", "list", "--admin-token", TOKEN, "--url", server.url])
    expect(flagged.code).toBe(0)
    expect(flagged.stdout + flagged.stderr).not.toContain(TOKEN)
    // What the CLI did is in the audit log under the token's name.
    const audit = await fetch(`${server.url}/admin/audit?actor=alice&action=catalog.replace`, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect((await audit.json()).entries.length).toBeGreaterThan(0)
  })
})

const pgUrl = await freshPostgresUrl()

describe("the command line itself", () => {
  it("prints its help as plain text, and refuses a wrong command line with USAGE", async () => {
    const help = await cli(["--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/\n {2}accounts list +List accounts/)
    expect(help.stdout + (await cli(["jobs", "list", "--help"])).stdout).not.toContain("\u001b[")
    const usage = await cli(["accounts", "create", "--json"])
    expect([usage.code, JSON.parse(usage.stderr).error]).toEqual([1, { code: "USAGE", message: "genjobs accounts create: --name is required" }])
    const human = await cli(["acounts", "list"])
    expect([human.code, human.stderr]).toEqual([1, "error: USAGE: genjobs: unknown command acounts\nRun genjobs --help for its usage.\n"])
  })
})

describe("genjobs migrate", SLOW, () => {
  it("migrates the SQLite store in DATA_DIR and exits", async () => {
    const dataDir = tempDataDir()
    const human = await cli(["migrate"], { DATA_DIR: dataDir })
    expect(human).toMatchObject({ code: 0, stdout: `SQLite ${join(dataDir, "genjobs.db")} is up to date\n` })
    expect(existsSync(join(dataDir, "genjobs.db"))).toBe(true)
    const again = await cli(["migrate", "--json"], { DATA_DIR: dataDir })
    expect(JSON.parse(again.stdout)).toEqual({ migrated: true, database: `SQLite ${join(dataDir, "genjobs.db")}` })
    const bad = await cli(["migrate", "--json"], { DATABASE_URL: "mysql://x" })
    expect(bad.code).toBe(1)
    expect(JSON.parse(bad.stderr).error.code).toBe("CONFIG_ERROR")
  })

  // Skipped, not passed, without PostgreSQL (and failed under CI: freshPostgresUrl throws there).
  it.skipIf(pgUrl === undefined)("migrates a PostgreSQL database named by DATABASE_URL, without printing its credentials", async () => {
    const url = new URL(pgUrl!)
    // A password the server ignores under trust auth, or the one TEST_DATABASE_URL needs.
    url.password ||= "hunter2"
    const result = await cli(["migrate", "--json"], { DATABASE_URL: url.href })
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout).database).toBe(`PostgreSQL ${url.host}${url.pathname}`)
    expect(result.stdout + result.stderr).not.toContain(url.password)
  })
})
