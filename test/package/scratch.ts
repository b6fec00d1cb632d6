/**
 * What the package suites share: the repository's package.json, npm in a scratch project, and
 * the package packed as npm would publish it.
 */
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

export const run = promisify(execFile)
export const ROOT = fileURLToPath(new URL("../..", import.meta.url))
export const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))

/** npm's settings for the scratch installs: the shared cache first, and no audit, fund or update notices. */
export const NPM_ENV = {
  npm_config_loglevel: "error",
  npm_config_prefer_offline: "true",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false"
}

export const npm = (cwd: string, args: Array<string>) =>
  run("npm", args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...NPM_ENV } })

/**
 * `npm pack` into `dir`; the tarball's path. globalSetup has just built dist/ (what `prepare`
 * runs); packing without scripts keeps the e2e suites, which run dist/ at the same time, from
 * seeing it rebuilt under them.
 */
export const packInto = async (dir: string): Promise<string> => {
  const { stdout } = await npm(ROOT, ["pack", "--ignore-scripts", "--json", "--pack-destination", dir])
  return join(dir, JSON.parse(stdout)[0].filename)
}
