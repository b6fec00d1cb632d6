import * as Effect from "effect/Effect"
import type { CliError } from "./errors.js"
import { errorText } from "./errorText.js"
import { CliIo } from "./io.js"

/** Micro-cents as dollars: at least two decimals, up to six when they matter. */
export const dollars = (microCents: number): string => {
  const abs = Math.abs(microCents)
  const fraction = String(abs % 1_000_000).padStart(6, "0").replace(/0+$/, "").padEnd(2, "0")
  return `${microCents < 0 ? "-" : ""}$${Math.floor(abs / 1_000_000).toLocaleString("en-US")}.${fraction}`
}

/** Rows under a header, each column as wide as its widest cell. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")
  return [line(header), ...rows.map(line)].join("\n")
}

/** `label: value` lines, labels aligned. */
export const fields = (pairs: ReadonlyArray<readonly [string, string]>): string => {
  const width = Math.max(...pairs.map(([label]) => label.length))
  return pairs.map(([label, value]) => `${`${label}:`.padEnd(width + 1)} ${value}`).join("\n")
}

export const list = (values: ReadonlyArray<string>) => (values.length === 0 ? "-" : values.join(", "))

/** The command's answer: JSON for scripts, or the human rendering. */
export const emit = (json: boolean, value: unknown, human: () => string) =>
  Effect.map(Effect.service(CliIo), (io) => io.stdout(`${json ? JSON.stringify(value, null, 2) : human()}\n`))

/** A line about work under way, on stderr so stdout stays the answer; nothing in JSON mode. */
export const progress = (json: boolean, text: string) => (json ? Effect.void : Effect.map(Effect.service(CliIo), (io) => io.stderr(`${text}\n`)))

/** The error on stderr, then the failure that makes the exit code 1. */
export const report = (json: boolean) => (error: CliError) =>
  Effect.andThen(Effect.map(Effect.service(CliIo), (io) => io.stderr(`${errorText(json, error)}\n`)), Effect.fail(error))
