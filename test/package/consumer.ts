/**
 * A consumer of the published package: typechecked by the tarball test with strict settings and
 * no skipLibCheck, then run with plain node. It starts an engine, mounts it, and asks it for /health.
 */
import { DEMO_PROVIDER_ID, type Engine, makeDemoProvider, makeEngine } from "genjobs"
import { type EngineFetch, genjobsExpress, genjobsFastify, genjobsHono, genjobsNext, genjobsNode } from "genjobs/http"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const engine: Engine = await makeEngine({
  store: memoryStore(),
  files: memoryFiles({ publicUrl: "http://127.0.0.1/api/genjobs" }),
  providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
  http: { adminToken: "consumer-admin" },
  basePath: "/api/genjobs"
})
const fetchEngine: EngineFetch = engine.fetch
const direct = await fetchEngine(new Request("http://127.0.0.1/api/genjobs/health"), { remoteAddress: "127.0.0.1" })

// Every mount builds from the same engine without a framework installed.
const mounts = [genjobsExpress(engine), genjobsFastify(engine), genjobsHono(engine), genjobsNext(engine, { trustedProxyHops: 1 })]

const server = createServer(genjobsNode(engine)).listen(0, "127.0.0.1")
await new Promise((resolve) => server.once("listening", resolve))
const { port } = server.address() as AddressInfo
const mounted = await fetch(`http://127.0.0.1:${port}/api/genjobs/health`)
server.close()
await engine.dispose()
console.log(JSON.stringify({ direct: direct.status, mounted: mounted.status, mounts: mounts.length }))
