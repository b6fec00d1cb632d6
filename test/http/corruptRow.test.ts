import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { DEFAULT_TABLE_PREFIX } from "../../src/domain/tablePrefix.js"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const IMAGE = "demo/image-gen/text-to-image"

describe("a stored job row that does not decode", () => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-corrupt-"))
  const filename = join(dir, "corrupt.db")
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine({}, { stores: layerSqlite({ filename }) })
  })
  afterAll(async () => {
    await engine.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it("answers 500 INTERNAL_ERROR in the envelope, without Retry-After, and logs the row's id", async () => {
    const acc = await engine.account()
    const submitted = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } })
    expect(submitted.status).toBe(200)
    const jobId: string = submitted.body.jobId
    // A status no release writes, as a hand edit or a bad migration leaves it.
    const db = new DatabaseSync(filename)
    try {
      expect(db.prepare(`UPDATE ${DEFAULT_TABLE_PREFIX}jobs SET status = 'exploded' WHERE id = ?`).run(jobId).changes).toBe(1)
    } finally {
      db.close()
    }

    const logged = vi.spyOn(console, "log").mockImplementation(() => undefined)
    try {
      const reply = await acc.get(`/v1/jobs/${jobId}`)
      expect(reply.status).toBe(500)
      expect(reply.headers.get("retry-after")).toBeNull()
      expect(reply.body).toEqual({
        success: false,
        error: { code: "INTERNAL_ERROR", message: "An internal error occurred", details: {} },
        requestId: reply.headers.get("x-request-id")
      })
      const lines = logged.mock.calls.map((args) => args.map(String).join(" "))
      expect(lines.filter((line) => line.includes("corrupt row") && line.includes(jobId))).toHaveLength(1)
    } finally {
      logged.mockRestore()
    }
  })
})
