/**
 * Issue 9: a 200 MB video output given as a URL is streamed into storage, never held whole. The
 * storing process (support/largeOutputWorker.ts: the engine on SQLite and local files, Replicate
 * pointed at the simulator's 200 MB file) has its RSS read from /proc every 20 ms for the whole job.
 *
 * Two runs, because RSS also counts memory the process no longer holds. V8 collects the buffers
 * of a download once about 64 MB of them are outstanding (its external-memory limit), so RSS
 * peaks near +64 MB with any fast download, a bare `fetch` piped to a file included (measured
 * +64 to +77 MiB on this machine); and glibc keeps the freed 64 KB chunks resident, so RSS stays
 * near that peak after the collection (measured: +26 to +50 MiB of RSS left after the job with
 * 0.1 MiB of ArrayBuffers alive; +5 MiB with MALLOC_MMAP_THRESHOLD_=16384, which gives each
 * chunk back to the system as it is freed). So:
 * - as the process runs by default, the peak RSS growth must stay below the file: a copy of the
 *   file in memory fails it. (Half the file was the bound on Node 20; Node 24 collects later when
 *   the machine is busy: +73 MiB alone, +134 MiB beside other suites, measured.)
 * - with garbage collected each time 16 MB more were read while the job runs, the live memory
 *   read right after each collection (V8's heap and the ArrayBuffers still reachable, where
 *   every chunk of a body is) must grow by less than 64 MB, the issue's bound. RSS read after
 *   collections, the measure before, went to +68 to +79 MiB: malloc's high-water, not memory
 *   held (heap and ArrayBuffers had grown by about 1 MiB at those peaks, measured).
 *
 * In the fault suite because its files run one at a time: 200 MB at full speed beside the
 * parallel default suite would slow both. It needs no PostgreSQL.
 */
import { statSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ReplicateSimulator, startReplicateSimulator } from "../simulators/replicate.js"
import { tempDataDir } from "../support/serverProcess.js"
import { rssOf, startTs, type TsProcess } from "./support/childProcess.js"
import { FILES_PUBLIC_URL } from "./support/replicateEngine.js"

const SIZE = 200 * 1024 * 1024
const LIMIT = 64 * 1024 * 1024
const MiB = (bytes: number) => Math.round(bytes / (1024 * 1024))

describe.skipIf(process.platform !== "linux")("a 200 MB video output given as a URL", () => {
  let sim: ReplicateSimulator
  const workers: Array<TsProcess> = []

  beforeAll(async () => {
    sim = await startReplicateSimulator({ largeFileBytes: SIZE })
  })
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop("SIGKILL")))
    await sim?.close()
  })

  /** Runs one job of the large model in a fresh storing process; answers its RSS before and at peak. */
  const storeLargeOutput = async (liveMemory: boolean) => {
    const dir = tempDataDir()
    const filesDir = join(dir, "files")
    const worker = await startTs("./largeOutputWorker.ts", {
      SQLITE_FILE: join(dir, "genjobs.db"),
      FILES_DIR: filesDir,
      REPLICATE_URL: sim.url,
      REPLICATE_TOKEN: sim.apiToken,
      LIVE_MEMORY: liveMemory ? "1" : "0"
    }, { readyLine: "worker ready", execArgv: ["--expose-gc"] })
    workers.push(worker)

    const idle: Array<number> = []
    for (let i = 0; i < 20; i++) {
      idle.push(rssOf(worker.pid))
      await new Promise((r) => setTimeout(r, 50))
    }
    const baseline = idle.sort((a, b) => a - b)[Math.floor(idle.length / 2)]!

    const startedAt = Date.now()
    let peak = baseline
    worker.signal("SIGUSR2")
    while (!worker.output.includes("job {")) {
      if (worker.child.exitCode !== null) throw new Error(`the worker exited:\n${worker.output}`)
      if (Date.now() - startedAt > 150_000) throw new Error(`the job did not end in 150 s:\n${worker.output}`)
      peak = Math.max(peak, rssOf(worker.pid))
      await new Promise((r) => setTimeout(r, 20))
    }
    const seconds = (Date.now() - startedAt) / 1000
    await worker.stop("SIGKILL")

    const job = JSON.parse(/job (\{.*\})/.exec(worker.output)![1]!)
    const held = liveMemory ? JSON.parse(/held (\{.*\})/.exec(worker.output)![1]!) as { baseline: number; peak: number } : undefined
    expect(job).toMatchObject({ status: "completed", outputs: [{ type: "video", contentType: "video/mp4" }] })
    const url = job.output as string
    expect(url.startsWith(`${FILES_PUBLIC_URL}/files/`)).toBe(true)
    expect(statSync(join(filesDir, url.slice(`${FILES_PUBLIC_URL}/files/`.length))).size).toBe(SIZE)
    return { baseline, peak, seconds, held }
  }

  // Two 200 MB jobs: a minute or more on a busy machine.
  it("is stored whole; the storing process's RSS grows by less than 64 MB of live memory, and never by the file", { timeout: 360_000 }, async () => {
    const plain = await storeLargeOutput(false)
    const collected = await storeLargeOutput(true)
    expect(sim.counters.starts).toBe(2)
    console.log(
      `[fault] 200 MB output: as it runs, stored in ${plain.seconds.toFixed(1)} s, RSS ${MiB(plain.baseline)} MiB before, growth ${MiB(plain.peak - plain.baseline)} MiB at peak; ` +
        `with garbage collected each 16 MB read, stored in ${collected.seconds.toFixed(1)} s, growth ${MiB(collected.peak - collected.baseline)} MiB at peak sampled, ${MiB(collected.held!.peak - collected.held!.baseline)} MiB of live memory (heap and ArrayBuffers) read after collections (limit 64)`
    )
    expect(plain.peak - plain.baseline).toBeLessThan(SIZE)
    expect(collected.held!.peak - collected.held!.baseline).toBeLessThan(LIMIT)
  })
})
