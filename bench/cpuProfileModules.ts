/**
 * The self time of a server's CPU profile grouped by module, as docs/benchmarks.md tabulates it:
 * `npx tsx bench/cpuProfileModules.ts <file.cpuprofile> [skipMs] [uptoMs]`. Profiles come from
 * `BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=<dir>" npm run bench -- http_submit`;
 * skipMs/uptoMs keep the samples of the load (the server's start and stop left out). Percentages
 * are of the samples that were not idle. The profiler samples on a wall clock, so on a loaded
 * machine a system call the process was preempted in (writev, mostly) is over-counted: it is a
 * group of its own.
 */
import { readFileSync } from "node:fs"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string }
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** First match wins: the order puts the specific before the general. */
const GROUPS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^\(garbage collector\)$/, "garbage collection"],
  [/^\(idle\)$/, "idle"],
  [/^\(program\)$/, "V8 outside JS (program)"],
  [/^writev$/, "socket writes (writev, kernel)"],
  [/@effect\/platform/, "HttpApi / @effect/platform"],
  [/effect\/dist\/.*(Schema|ParseResult|SchemaAST|internal\/schema)/, "Schema decode/encode"],
  [/effect\/dist\/.*(logger|Logger|LogLevel)/, "Effect logger"],
  [/effect\/dist\/.*[mM]etric/, "Effect metrics"],
  [/effect\/dist\//, "Effect runtime (fibers, FiberRefs, Context)"],
  [/@effect\/sql-pg|node_modules\/pg/, "pg driver, @effect/sql-pg"],
  [/@effect\/sql\//, "@effect/sql (statements)"],
  [/adapters\/sql\/sqlite/, "SQLite driver (node:sqlite calls)"],
  [/\/src\/observability\//, "engine logging and metrics"],
  [/\/src\/services\/(Auth|storeCache|AuthThrottle)/, "auth (key cache, throttle)"],
  [/\/src\/services\/Catalog|\/src\/domain\/(catalog|pricing|inputSchema)/, "catalog, validation, pricing"],
  [/\/src\/http\//, "engine HTTP layer (src/http)"],
  [/\/src\/services\/(jobs|jobRepo)/, "engine submit steps"],
  [/\/adapters\/sql\//, "SQL adapter (statements built)"],
  [/\/(src|adapters|apps)\//, "engine, other"],
  [/^node:/, "Node core (http, net, streams)"],
  [/^$/, "native builtins"]
]

const groupOf = ({ functionName, url }: ProfileNode["callFrame"]) => {
  const key = url === "" && (functionName.startsWith("(") || functionName === "writev") ? functionName : url
  return GROUPS.find(([pattern]) => pattern.test(key))?.[1] ?? "other"
}

const [file, skipMs = "0", uptoMs = "1e12"] = process.argv.slice(2)
if (file === undefined) throw new Error("usage: tsx bench/cpuProfileModules.ts <file.cpuprofile> [skipMs] [uptoMs]")
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile
const selfUs = new Map<number, number>()
let at = 0
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0
  at += delta
  if (at >= Number(skipMs) * 1000 && at <= Number(uptoMs) * 1000) selfUs.set(id, (selfUs.get(id) ?? 0) + delta)
})
const totals = new Map<string, number>()
for (const node of profile.nodes) {
  const group = groupOf(node.callFrame)
  totals.set(group, (totals.get(group) ?? 0) + (selfUs.get(node.id) ?? 0))
}
const busy = [...totals].filter(([group]) => group !== "idle").reduce((sum, [, us]) => sum + us, 0)
console.log(`busy ${Math.round(busy / 1000)} ms, idle ${Math.round((totals.get("idle") ?? 0) / 1000)} ms`)
for (const [group, us] of [...totals].filter(([g]) => g !== "idle").sort((a, b) => b[1] - a[1])) {
  console.log(`${((100 * us) / busy).toFixed(1).padStart(5)} %  ${group}`)
}
