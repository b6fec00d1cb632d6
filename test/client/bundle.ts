import { build } from "esbuild"
import { fileURLToPath } from "node:url"

const ENTRY = fileURLToPath(new URL("../../entries/client.ts", import.meta.url))

/**
 * genjobs/client as an app's bundler packs it for a browser: one minified ES module from the
 * source entry. Every package and Node module is left as an import rather than packed, so that
 * `imports` lists whatever the client would make an app install or a browser fail on.
 */
export const bundleClient = async () => {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    packages: "external",
    external: ["node:*"],
    write: false,
    metafile: true,
    logLevel: "silent"
  })
  const [output] = Object.values(result.metafile.outputs)
  return {
    code: result.outputFiles[0]!.text,
    imports: output!.imports.map((i) => i.path),
    inputs: Object.keys(result.metafile.inputs)
  }
}
