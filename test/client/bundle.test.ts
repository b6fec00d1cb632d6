import { readFileSync } from "node:fs"
import { gzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { bundleClient } from "./bundle.js"

/** The size docs/client.md promises for genjobs/client, minified and gzipped. */
const MAX_GZIPPED_BYTES = 10 * 1024

describe("genjobs/client bundled for a browser", () => {
  it("imports nothing: no effect, no other package, no Node module", async () => {
    const { imports, inputs } = await bundleClient()
    expect(imports).toEqual([])
    expect(inputs.filter((file) => !/^(src\/client\/|src\/domain\/webhookRequest\.ts$|src\/domain\/retryAfter\.ts$|entries\/client\.ts$)/.test(file))).toEqual([])
  })

  it(`is at most ${MAX_GZIPPED_BYTES / 1024} KiB minified and gzipped`, async () => {
    const { code } = await bundleClient()
    const gzipped = gzipSync(code).byteLength
    console.log(`genjobs/client: ${code.length} bytes minified, ${gzipped} gzipped`)
    expect(gzipped).toBeLessThanOrEqual(MAX_GZIPPED_BYTES)
  })

  it("docs/client.md promises that size", () => {
    const page = readFileSync(new URL("../../docs/client.md", import.meta.url), "utf8")
    expect(page).toContain(`at most ${MAX_GZIPPED_BYTES / 1024} KiB minified and gzipped`)
  })
})
