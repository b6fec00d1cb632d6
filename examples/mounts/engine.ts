/**
 * The engine the mount examples serve: in memory, with the demo provider. Each example mounts it
 * with a framework; docs/mounts.md shows them, test/package/tarball.test.ts runs them. The
 * Next.js example holds its own (next/lib/engine.ts), so that it pastes into a project alone.
 */
import { DEMO_PROVIDER_ID, demoCatalog, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"

export const port = Number(process.env["PORT"] ?? 3000)
export const host = process.env["HOST"] ?? "127.0.0.1"
export const basePath = process.env["BASE_PATH"] ?? "/api/genjobs"
/** Where clients reach the engine, base path included: file and upload URLs are built on it. */
const publicUrl = `${process.env["PUBLIC_URL"] ?? `http://${host}:${port}`}${basePath}`

export const makeExampleEngine = () =>
  makeEngine({
    store: memoryStore(),
    files: memoryFiles({ publicUrl }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    catalog: demoCatalog,                                  // the models clients may submit; yours in its place
    http: { adminToken: process.env["ADMIN_TOKEN"], trustedProxyHops: Number(process.env["TRUSTED_PROXY_HOPS"] ?? 0) },
    basePath
  })
