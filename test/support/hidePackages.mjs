/**
 * `node --import ./test/support/hidePackages.mjs ...`: the packages named in HIDE_PACKAGES
 * (comma-separated) resolve as if they were not installed, so a test can run the built package as
 * a user who skipped its optional peers would, without a second node_modules.
 */
import { registerHooks } from "node:module"

const hidden = (process.env["HIDE_PACKAGES"] ?? "").split(",").filter((name) => name !== "")

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (hidden.some((name) => specifier === name || specifier.startsWith(`${name}/`))) {
      // What Node itself throws for a package that is not installed.
      throw Object.assign(new Error(`Cannot find package '${specifier}' imported from ${context.parentURL}`), { code: "ERR_MODULE_NOT_FOUND" })
    }
    return nextResolve(specifier, context)
  }
})
