import { globSync, readFileSync } from "node:fs"
import { isIP } from "node:net"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { isForbiddenAddress } from "../../src/domain/publicAddress.js"

/**
 * Tests send traffic only to loopback (docs/testing.md): a host in the code is loopback, a name
 * that never resolves on the internet, or a production default listed below. Names under the
 * reserved TLDs (RFC 2606, RFC 6761) and single-label names (`http://x` as a parse base) never
 * reach a public server; example.com and its siblings do resolve, to IANA's servers.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const SCANNED = ["test", "bench", "adapters", "src", "apps", "entries", "examples"].map((dir) => `${dir}/**/*.{ts,tsx,js,mjs,cjs,json,html,css}`)
const SELF = "test/unit/noExternalHosts.test.ts"

/** Public hosts that are meant: what production talks to or names, never a test's target. */
const ALLOWED: ReadonlyArray<{ readonly host: string; readonly under: string; readonly why: string }> = [
  { host: "queue.fal.run", under: "adapters/providers/fal/", why: "the fal adapter's default base URL" },
  { host: "api.openai.com", under: "adapters/providers/openai/", why: "the OpenAI adapter's default base URL" },
  { host: "openrouter.ai", under: "adapters/providers/openrouter/", why: "the OpenRouter adapter's default base URL" },
  { host: "api.replicate.com", under: "adapters/providers/replicate/", why: "the Replicate adapter's default base URL" },
  { host: "api.dev.runwayml.com", under: "adapters/providers/runway/", why: "the Runway adapter's default base URL" },
  { host: "generativelanguage.googleapis.com", under: "adapters/providers/veo/", why: "the Veo adapter's default base URL" },
  { host: "github.com", under: "src/services/webhookDispatch/attempt.ts", why: "the webhook User-Agent names the project" },
  { host: "spdx.org", under: "src/http/Api.ts", why: "the OpenAPI document's license link" },
  { host: "www.w3.org", under: "", why: "the SVG namespace, an identifier that is never fetched" },
  { host: "platform.openai.com", under: "test/simulators/openai.ts", why: "OpenAI's error text, copied as a message" },
  { host: "93.184.216.34", under: "test/services/outputGuard.test.ts", why: "a public address handed to a pure check, never dialled" },
  { host: "2606:4700::1111", under: "test/unit/webhookUrl.test.ts", why: "a public address handed to a pure parser, never dialled" },
  ...["replicate.com", "fal.ai", "openai.com", "runwayml.com", "ai.google.dev", "openrouter.ai"].map((host) => ({
    host,
    under: "examples/catalogs/providers.json",
    why: "the sample catalog of real providers names their sites and logos for operators"
  }))
]

const RESERVED_SUFFIXES = [".test", ".invalid", ".localhost", ".example"]
const URL_HOST = /\bhttps?:\/\/(\[[^\]\s]*\]|[^/\s"'`:?#\\$)]+)/gi
const EXAMPLE_DOMAIN = /\bexample\.(?:com|org|net)\b/i

/** Comments may show a deployment's URL (`e.g. https://api.example.com`): they are never traffic. */
const isComment = (line: string) => /^\s*(?:\/\/|\/\*|\*)/.test(line)

/** Whether a host never leads to a public server: loopback or private, reserved, or one label. */
const staysLocal = (host: string) => {
  const bare = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "")
  if (isIP(bare) !== 0) return isForbiddenAddress(bare)
  return bare === "localhost" || !bare.includes(".") || RESERVED_SUFFIXES.some((suffix) => bare.endsWith(suffix))
}

/** The hosts on a file's lines that are neither local nor allowed for it, as `file:line host`. */
const offences = (file: string, text: string): Array<string> =>
  text.split("\n").flatMap((line, i) => {
    if (isComment(line)) return []
    const hosts = [...line.matchAll(URL_HOST)].map((m) => m[1]!).filter((host) => !staysLocal(host))
    // A bare name too (a Host header, an attribute), when no URL on the line already names it.
    const named = EXAMPLE_DOMAIN.exec(line)?.[0]
    const bare = named === undefined || hosts.some((host) => host.toLowerCase().endsWith(named.toLowerCase())) ? [] : [named]
    return [...hosts, ...bare]
      .filter((host) => !ALLOWED.some((a) => a.host === host.replace(/^\[|\]$/g, "") && file.startsWith(a.under)))
      .map((host) => `${file}:${i + 1} ${host}`)
  })

describe("tests and code reach no host outside loopback", () => {
  it("tells public hosts from local and reserved ones", () => {
    const bad = ["https://example.com/x", "http://hooks.example.org/in", "https://93.184.216.34/", "https://cdn.vendor.io/a.png"]
    const good = [
      "https://receiver.genjobs.test/hook",
      "http://127.0.0.1:9/v1",
      "https://[::1]:8443/",
      "http://localhost:3000",
      "https://a.invalid/",
      "http://x",
      "https://files.example/f",
      "http://10.1.2.3/x",
      "http://${host}/x"
    ]
    expect(bad.map((url) => offences("test/a.ts", `const u = "${url}"`).length)).toEqual([1, 1, 1, 1])
    expect(good.flatMap((url) => offences("test/a.ts", `const u = "${url}"`))).toEqual([])
    expect(offences("test/a.ts", `server: { address: "hooks.example.net" }`)).toEqual(["test/a.ts:1 example.net"])
    expect(offences("src/a.ts", `  /** The engine's URL, e.g. https://api.example.com */`)).toEqual([])
    expect(offences("test/a.ts", `const base = "https://api.openai.com/v1"`)).toEqual(["test/a.ts:1 api.openai.com"])
    expect(offences("adapters/providers/openai/OpenAIProvider.ts", `const base = "https://api.openai.com/v1"`)).toEqual([])
  })

  it("finds none in test/, bench/, adapters/, src/, apps/, entries/ or examples/", () => {
    const files = globSync(SCANNED, { cwd: ROOT, exclude: (name) => name === "node_modules" }).filter((file) => file !== SELF)
    expect(files.length).toBeGreaterThan(100)
    const texts = files.map((file) => [file, readFileSync(`${ROOT}/${file}`, "utf8")] as const)
    expect(texts.flatMap(([file, text]) => offences(file, text))).toEqual([])
    // Each allowance is still used, so the list cannot outlive what it excuses.
    const used = (host: string, under: string) =>
      texts.some(([file, text]) => file.startsWith(under) && text.split("\n").some((line) => !isComment(line) && line.includes(host)))
    expect(ALLOWED.filter((a) => !used(a.host, a.under)).map((a) => `${a.host} in ${a.under}`)).toEqual([])
  })
})
