import { Schema } from "effect"

/**
 * A job's provider log as the engine keeps it: the lines its provider reported while the job
 * ran, redacted of secrets, capped per job. These rules are the only place that decides what is
 * kept; stores only append and read.
 */

/** Lines kept per job at most, the cap's marker line included. */
export const MAX_LOG_LINES = 1000
/** Bytes (UTF-8) of kept lines per job at most, the cap's marker line included. */
export const MAX_LOG_BYTES = 256 * 1024
/** A longer line is cut to this many characters and ends with LINE_CUT. */
export const MAX_LOG_LINE_LENGTH = 2000
export const LINE_CUT = " [cut]"
/** The last line kept once the cap is reached; nothing follows it. */
export const LOG_CAP_MARKER = "[genjobs] log cap reached: later lines of this job are not kept"
export const REDACTED = "[REDACTED]"

/**
 * Where a job's log stands, stored with the job: how many of the provider's lines were taken
 * (the provider's log is read again from there), how many lines and bytes are kept, and whether
 * the cap's marker was written.
 */
export const ProviderLogMark = Schema.Struct({
  taken: Schema.Int,
  lines: Schema.Int,
  bytes: Schema.Int,
  capped: Schema.Boolean
})
export type ProviderLogMark = typeof ProviderLogMark.Type

export const emptyLogMark: ProviderLogMark = { taken: 0, lines: 0, bytes: 0, capped: false }

/** One kept line: its place in the job's log (1, 2, ...), when the engine read it (epoch ms), its text. */
export interface LogLine {
  readonly seq: number
  readonly at: number
  readonly line: string
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Known secrets shorter than this are not searched for: a short value would blank ordinary words. */
const MIN_SECRET_LENGTH = 8

const patterns: ReadonlyArray<readonly [RegExp, string]> = [
  // Authorization schemes followed by a credential.
  [/\b(Bearer|Basic|Token|Key)(\s+)[A-Za-z0-9._~+/=-]{8,}/gi, `$1$2${REDACTED}`],
  // The query string of any URL: signed URLs carry their signature and credential there.
  [/(\bhttps?:\/\/[^\s?#"'<>]+)\?[^\s#"'<>]*/gi, `$1?${REDACTED}`],
  // key=..., api_key: "...", token=..., secret=..., password=..., signature=...
  [
    /\b([A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|signature|sig|credential)s?)(["']?\s*[:=]\s*["']?)([^\s"'&,;]+)/gi,
    `$1$2${REDACTED}`
  ],
  // Token formats of the providers the engine ships with (OpenAI, Replicate, fal, Runway, Google).
  [/\b(?:sk|r8|rk|pk|key)[-_][A-Za-z0-9_-]{16,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED]
]

/**
 * A log line with what could be a secret replaced by REDACTED: every value of `secrets` (the
 * credentials the engine calls the provider with), bearer and similar tokens, URL query strings
 * (signed URLs), and `key=value` or `"token": "value"` pairs whose name says secret.
 */
export const redactLine = (line: string, secrets: ReadonlyArray<string> = []): string => {
  let text = line
  for (const secret of secrets) {
    if (secret.length >= MIN_SECRET_LENGTH) text = text.replace(new RegExp(escapeRegExp(secret), "g"), REDACTED)
  }
  for (const [pattern, replacement] of patterns) text = text.replace(pattern, replacement)
  return text
}

/** A line cut to MAX_LOG_LINE_LENGTH characters (never inside a surrogate pair). */
export const cutLine = (line: string): string => {
  if (line.length <= MAX_LOG_LINE_LENGTH) return line
  let end = MAX_LOG_LINE_LENGTH - LINE_CUT.length
  const code = line.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end--
  return line.slice(0, end) + LINE_CUT
}

const utf8Bytes = (text: string) => Buffer.byteLength(text, "utf8")

/**
 * A line as it shows: a progress bar redrawn with carriage returns keeps its last drawing;
 * PostgreSQL's TEXT refuses U+0000, and other control characters but tab show as a space.
 */
const clean = (line: string) => {
  const drawn = line.replace(/\r+$/, "")
  // eslint-disable-next-line no-control-regex
  return drawn.slice(drawn.lastIndexOf("\r") + 1).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, " ").trimEnd()
}

export interface LogAppendPlan {
  readonly mark: ProviderLogMark
  readonly lines: ReadonlyArray<LogLine>
}

/**
 * What a poll adds to a job's log. `reported` is the provider's whole log as it answers it now
 * (each provider answers all of it on every poll): the lines past `mark.taken` are new. Each is
 * cleaned, redacted, then cut; blank lines are dropped. Lines are kept while both caps leave room
 * for the marker; the first that does not fit writes the marker instead, and nothing is kept
 * after it. Undefined when nothing is new, or the log is capped already (nothing to write). A log shorter than `mark.taken`
 * (a new generation's) is read from its start.
 */
export const planLogAppend = (
  mark: ProviderLogMark,
  reported: ReadonlyArray<string>,
  secrets: ReadonlyArray<string>,
  now: number
): LogAppendPlan | undefined => {
  const from = reported.length < mark.taken ? 0 : mark.taken
  // Past the cap nothing more is kept, so nothing is written either.
  if (reported.length === from || mark.capped) return undefined
  const markerBytes = utf8Bytes(LOG_CAP_MARKER)
  const lines: Array<LogLine> = []
  let { bytes, lines: count } = mark
  let capped: boolean = mark.capped
  for (const raw of reported.slice(from)) {
    if (capped) break
    const line = cutLine(redactLine(clean(raw), secrets))
    if (line.trim().length === 0) continue
    const size = utf8Bytes(line)
    if (count + 2 > MAX_LOG_LINES || bytes + size + markerBytes > MAX_LOG_BYTES) {
      lines.push({ seq: ++count, at: now, line: LOG_CAP_MARKER })
      bytes += markerBytes
      capped = true
      break
    }
    lines.push({ seq: ++count, at: now, line })
    bytes += size
  }
  return { mark: { taken: reported.length, lines: count, bytes, capped }, lines }
}

/**
 * The progress to show after a provider reported `reported` (any number; none when undefined):
 * a whole number from 0 to 100, never below what was shown (`current`). Undefined when nothing
 * changes.
 */
export const nextProgress = (current: number | null | undefined, reported: number | undefined): number | undefined => {
  if (reported === undefined || !Number.isFinite(reported)) return undefined
  const value = Math.min(100, Math.max(0, Math.floor(reported)))
  return current !== null && current !== undefined && current >= value ? undefined : value
}

/**
 * The last percentage a log reports in progress-bar lines (tqdm's ` 45%|`, `Progress: 45%`, or
 * `45/100` steps beside a bar), reading from the end; undefined when no line has one.
 */
export const lastPercentOf = (lines: ReadonlyArray<string>): number | undefined => {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!
    // tqdm redraws its bar with carriage returns: the last drawing is what the line shows.
    const drawn = line.slice(line.lastIndexOf("\r") + 1)
    const bar = /(\d{1,3}(?:\.\d+)?)\s?%\s?\|/.exec(drawn) ?? /\b(?:progress|step)\D{0,3}(\d{1,3}(?:\.\d+)?)\s?%/i.exec(drawn)
    if (bar !== null) {
      const value = Number(bar[1])
      if (value >= 0 && value <= 100) return value
    }
  }
  return undefined
}

/**
 * The complete lines of a provider's log text, as providers that answer one text (Replicate)
 * send it: a last line without its newline is still being written (a progress bar redrawn in
 * place), and is taken once it ends.
 */
export const logTextLines = (text: string | null | undefined): ReadonlyArray<string> => {
  if (text === null || text === undefined || text.length === 0) return []
  return text.split("\n").slice(0, -1)
}
