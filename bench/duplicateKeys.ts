/**
 * duplicate_keys_*: the CPU the duplicate-key check spends on a submit's body it accepts (the
 * keys counted in the text, `countKeys`, against the members the parsed value's survey counts
 * anyway), against the CPU of the whole submit of that body through the web handler in-process
 * (memory store, no workers), both from process.cpuUsage in the same run. The issue asks for at
 * most 2 % of a submit. In params, what naming the key costs on a refused body
 * (`findDuplicateKey`). Bodies: the bench's usual submit, a 64 KiB prompt, and 64 KiB of small
 * input fields (the check's worst kind: a key every 16 bytes).
 */
import { memoryStore } from "genjobs/memory"
import { surveyJson } from "../src/domain/limits.js"
import { countKeys, findDuplicateKey } from "../src/http/duplicateKeys.js"
import { benchModel } from "./catalog.js"
import { handlerEngine } from "./lib/handlerEngine.js"
import { emit, log } from "./lib/report.js"

const KIB64 = 64 * 1_024

/** µs of this process's CPU (user + system) per run of `op`, over `n` runs after `n / 10` unmeasured ones. */
const cpuPerRun = async (n: number, op: (i: number) => unknown) => {
  for (let i = 0; i < Math.ceil(n / 10); i++) await op(i)
  const before = process.cpuUsage()
  for (let i = 0; i < n; i++) await op(i)
  const spent = process.cpuUsage(before)
  return (spent.user + spent.system) / n
}

/** The bodies measured, each with how many submits and checks make a steady figure. */
const bodies = (): ReadonlyArray<{ readonly name: string; readonly text: string; readonly submits: number; readonly checks: number }> => {
  const model = benchModel("demo")
  const fields: Record<string, number> = {}
  for (let i = 0; JSON.stringify(fields).length < KIB64; i++) fields[`field${i}`] = i
  return [
    { name: "typical", text: JSON.stringify({ model, input: { prompt: "a short bench prompt" } }), submits: 2_000, checks: 100_000 },
    { name: "64k_prompt", text: JSON.stringify({ model, input: { prompt: "a".repeat(KIB64) } }), submits: 500, checks: 20_000 },
    { name: "64k_fields", text: JSON.stringify({ model, input: { prompt: "p", ...fields } }), submits: 200, checks: 2_000 }
  ]
}

export const duplicateKeys = async () => {
  const { call, engine, key } = await handlerEngine(memoryStore())
  try {
    for (const body of bodies()) {
      log(`duplicate_keys: ${body.name} (${body.text.length} bytes), ${body.submits} submits, ${body.checks} checks`)
      const submitUs = await cpuPerRun(body.submits, () => call("POST", "/v1/jobs/submit", key, body.text))
      const { members } = surveyJson(JSON.parse(body.text))
      const checkUs = await cpuPerRun(body.checks, () => {
        if (countKeys(body.text) !== members) throw new Error("the bench body repeats a key")
      })
      const namingUs = await cpuPerRun(Math.ceil(body.checks / 10), () => findDuplicateKey(body.text))
      emit({
        figure: `duplicate_keys_${body.name}`,
        engine: checkUs,
        reference: submitUs,
        unit: "µs of CPU",
        better: "lower",
        referenceIs: "the whole submit of the same body, through the web handler in-process (memory store), check included",
        target: "<= 0.02",
        params: { bodyBytes: body.text.length, submits: body.submits, checks: body.checks, namingTheKeyUs: Math.round(namingUs * 10) / 10 }
      })
    }
  } finally {
    await engine.dispose()
  }
}
