/**
 * `npm run simulators`: every simulator of index.ts on its fixed port, with the environment to
 * start the bundled app against them. SIM_DURATION_MS sets how long a generation runs (default
 * 5000). Stops on Ctrl-C.
 */
import { simulators } from "./index.js"

const durationMs = Number(process.env["SIM_DURATION_MS"] ?? 5000)
const started = await Promise.all(simulators.map(async (entry) => ({ entry, served: await entry.start({ port: entry.port, durationMs }) })))

console.log(`Provider simulators (generations take ${durationMs} ms):\n`)
for (const { entry, served } of started) console.log(`  ${entry.name.padEnd(10)} ${served.url}`)
console.log("\nStart the bundled app against them with:\n")
// The simulators serve their output files from 127.0.0.1, which the app downloads only when told to.
const env = [...started.flatMap(({ served }) => Object.entries(served.env).map(([name, value]) => `${name}='${value}'`)), "PROVIDER_OUTPUT_ALLOW_PRIVATE=1"]
console.log(`  ${env.join(" \\\n  ")} \\\n  npm start\n`)
console.log("Replicate and fal.ai: models named with image, video, audio, text or large (a 200 MB video) make that")
console.log("kind of output; input sim_fail: \"message\" makes a generation fail, sim_duration_ms sets its duration.")
console.log("OpenAI (images): a prompt with [reject] is refused. Runway: a promptText with [fail] fails.")
console.log("Veo: a prompt with [fail] ends in an operation error, [filtered] is removed by the safety filters, [reject] is refused.")
console.log("OpenRouter: a prompt with [fail] makes the job fail, [reject] is refused by moderation; callbacks go to callback_url.")

const stop = async () => {
  await Promise.all(started.map(({ served }) => served.close()))
  process.exit(0)
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
