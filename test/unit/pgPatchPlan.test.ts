import Pg from "pg"
import { describe, expect, it } from "vitest"
import { installedPgVersions } from "../../adapters/sql/pgInternals.js"
import { pgPatchPlan } from "../../adapters/sql/pgPool.js"

/** What a bundler gives when it hides the packages' files: no version can be read. */
const hidden = { pg: undefined, "pg-pool": undefined }

describe("the pg pool patch's plan", () => {
  it("patches the installed pg without a warning, read from its package.json", () => {
    expect(pgPatchPlan(installedPgVersions(), Pg)).toEqual({ patch: true, warning: undefined })
  })

  it("under a bundler that hides package.json (Next.js): decides by pg's members, and does not warn with installed: {}", () => {
    expect(pgPatchPlan(hidden, Pg)).toEqual({ patch: true, warning: undefined })
  })

  it("hidden versions and a pg without the members the patch uses: unpatched, with a warning naming them", () => {
    class Pool {}
    class Client {}
    const plan = pgPatchPlan(hidden, { Pool, Client } as unknown as typeof Pg)
    expect(plan.patch).toBe(false)
    expect(plan.warning?.details).toEqual({ missing: ["pg-pool's _pulseQueue", "pg-pool's _pendingQueue", "pg's client _txStatus"] })
  })

  it("a readable release of another major: unpatched, with the versions in the warning", () => {
    const plan = pgPatchPlan({ pg: "9.0.0", "pg-pool": "4.0.0" }, Pg)
    expect(plan.patch).toBe(false)
    expect(plan.warning?.message).toMatch(/not written for/)
    expect(plan.warning?.details).toMatchObject({ installed: { pg: "9.0.0", "pg-pool": "4.0.0" } })
  })
})
