/**
 * `npm start`: the bundled server on the running Node when it is 22.19 or newer. On an older one
 * (Node 20 is past its end of life and has no `node:sqlite`, the SQLite store's driver; 22 before
 * .19 lacks what @effect/platform-node 4 needs) it says so and runs the
 * server on Node 24 from the npm registry (`node-<platform>-<arch>@24`, kept under
 * ~/.cache/genjobs), so the README's `npm install && npm start` works on any machine with npm.
 */
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("./main.js", import.meta.url))
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)

if (major > 22 || (major === 22 && minor >= 19)) {
  await import(main)
} else {
  const dir = join(process.env["XDG_CACHE_HOME"] ?? join(homedir(), ".cache"), "genjobs", "node-24")
  const pkg = `node-${process.platform}-${process.arch}`
  const node = join(dir, "node_modules", pkg, "bin", "node")
  console.error(`genjobs needs Node 22.19 or newer and this is Node ${process.versions.node}: running on Node 24 from the npm registry (${pkg}@24, in ${dir})`)
  if (!existsSync(node)) {
    mkdirSync(dir, { recursive: true })
    execFileSync("npm", ["install", "--prefix", dir, "--no-save", "--no-audit", "--no-fund", "--loglevel=error", `${pkg}@24`], { stdio: "inherit" })
  }
  const child = spawn(node, [...process.execArgv, main, ...process.argv.slice(2)], { stdio: "inherit" })
  // The server drains on SIGTERM and SIGINT: pass them on, and leave with its code.
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => child.kill(signal))
  child.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)))
}
