import { readdirSync, readFileSync } from "node:fs"

/**
 * CPU time spent by the processes a load run exercises, read from /proc (Linux). A throughput
 * ratio says how far apart two servers are; the CPU each request costs on each side, with the
 * cores the machine has, says what throughput is possible at all.
 */

// The kernel counts user and system time in clock ticks; 100 a second on every Linux this runs on.
const TICKS_PER_SECOND = 100

/** User + system CPU of one process, in ms; 0 for a process that has gone. */
export const processCpuMs = (pid: number): number => {
  try {
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND
  } catch {
    return 0
  }
}

/** Every PostgreSQL process on this machine (the postmaster, its backends and helpers). */
const postgresPids = (): ReadonlyArray<number> => {
  const pids: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "postgres") pids.push(Number(entry))
    } catch {
      // Gone between the listing and the read.
    }
  }
  return pids
}

export interface CpuSample {
  readonly server: number
  readonly database: number
  readonly loader: number
}

const sample = (serverPid: number): CpuSample => {
  const loader = process.cpuUsage()
  return {
    server: processCpuMs(serverPid),
    database: postgresPids().reduce((sum, pid) => sum + processCpuMs(pid), 0),
    loader: (loader.user + loader.system) / 1000
  }
}

/** Starts counting; the returned function gives µs of CPU per request for `requests` answered since. */
export const cpuPerRequest = (serverPid: number) => {
  const before = sample(serverPid)
  return (requests: number): CpuSample => {
    const after = sample(serverPid)
    const per = (key: keyof CpuSample) => Math.round(((after[key] - before[key]) * 1000) / Math.max(1, requests))
    return { server: per("server"), database: per("database"), loader: per("loader") }
  }
}
