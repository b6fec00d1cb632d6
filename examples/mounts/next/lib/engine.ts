/**
 * The Next.js example's engine, made once per server process: in memory, with the demo provider.
 * With app/api/genjobs/[[...path]]/route.ts it pastes as it is into an App Router project: no
 * next.config, no tsconfig path. test/package/tarball.test.ts builds it that way.
 */
import { DEMO_PROVIDER_ID, demoCatalog, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"

export const basePath = process.env["BASE_PATH"] ?? "/api/genjobs"
/** Where clients reach the engine, base path included: file and upload URLs are built on it. */
const publicUrl = `${process.env["PUBLIC_URL"] ?? `http://${process.env["HOST"] ?? "127.0.0.1"}:${process.env["PORT"] ?? 3000}`}${basePath}`

// A module-level await: Next loads this module once per server process (and once during
// `next build`, which this in-memory engine does not mind; see docs/mounts.md for a real store).
export const engine = await makeEngine({
  store: memoryStore(),
  files: memoryFiles({ publicUrl }),
  providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
  catalog: demoCatalog,                                  // the models clients may submit; yours in its place
  http: { adminToken: process.env["ADMIN_TOKEN"], trustedProxyHops: Number(process.env["TRUSTED_PROXY_HOPS"] ?? 0) },
  basePath
})

// Next exits on SIGTERM by itself unless NEXT_MANUAL_SIG_HANDLE is set; then this drains the engine.
process.once("SIGTERM", async () => {
  await engine.dispose()
  process.exit(0)
})
