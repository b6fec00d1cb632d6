import { describe, expect, it } from "vitest"
import {
  cutLine,
  emptyLogMark,
  lastPercentOf,
  LINE_CUT,
  LOG_CAP_MARKER,
  logTextLines,
  MAX_LOG_BYTES,
  MAX_LOG_LINE_LENGTH,
  MAX_LOG_LINES,
  nextProgress,
  planLogAppend,
  REDACTED,
  redactLine
} from "../../src/domain/providerLogs.js"

describe("redactLine", () => {
  it("replaces the credentials the engine knows, wherever they appear", () => {
    const secret = "r8_Zz9QkW2xLmN4pR7tY"
    expect(redactLine(`calling with ${secret} now (${secret})`, [secret])).toBe(`calling with ${REDACTED} now (${REDACTED})`)
    // Too short to search for: ordinary words would go.
    expect(redactLine("the cat sat", ["cat"])).toBe("the cat sat")
    // A secret with characters regular expressions treat specially is found literally.
    expect(redactLine("token a.b*c+d?e(f) used", ["a.b*c+d?e(f)"])).toBe(`token ${REDACTED} used`)
  })

  it("replaces bearer tokens, URL query strings and secret-named values", () => {
    expect(redactLine("Authorization: Bearer abcdefgh12345678")).toBe(`Authorization: Bearer ${REDACTED}`)
    expect(redactLine("fetched https://bucket.s3.genjobs.test/out.png?X-Amz-Signature=abc&X-Amz-Credential=AKIA done"))
      .toBe(`fetched https://bucket.s3.genjobs.test/out.png?${REDACTED} done`)
    expect(redactLine("api_key=hunter2hunter2 user=ann")).toBe(`api_key=${REDACTED} user=ann`)
    expect(redactLine(`{"token": "abc123", "steps": 30}`)).toBe(`{"token": "${REDACTED}", "steps": 30}`)
    expect(redactLine("password: letmein")).toBe(`password: ${REDACTED}`)
    expect(redactLine("using sk-proj-abcdefghijklmnopqrstuv")).toBe(`using ${REDACTED}`)
    expect(redactLine("google AIzaSyA1234567890abcdefghijklmnopqrstu")).toBe(`google ${REDACTED}`)
  })

  it("leaves ordinary lines alone", () => {
    const line = " 45%|████▌     | 23/50 [00:04<00:05, 5.1it/s] seed: 1234, keyframes 3"
    expect(redactLine(line)).toBe(line)
    expect(redactLine("Using seed 42 for https://docs.genjobs.test/page")).toBe("Using seed 42 for https://docs.genjobs.test/page")
  })
})

describe("cutLine", () => {
  it("cuts long lines to the documented length, marking the cut", () => {
    expect(cutLine("short")).toBe("short")
    const cut = cutLine("x".repeat(MAX_LOG_LINE_LENGTH + 1))
    expect(cut).toHaveLength(MAX_LOG_LINE_LENGTH)
    expect(cut.endsWith(LINE_CUT)).toBe(true)
    // Never inside a surrogate pair.
    const emoji = cutLine("a".repeat(MAX_LOG_LINE_LENGTH - LINE_CUT.length - 1) + "😀".repeat(10))
    expect(emoji.endsWith(`a${LINE_CUT}`)).toBe(true)
  })
})

describe("planLogAppend", () => {
  it("takes the provider's lines past those taken, redacted, numbered on", () => {
    const first = planLogAppend(emptyLogMark, ["loading", "token=abcdef"], [], 5)!
    expect(first.lines).toEqual([{ seq: 1, at: 5, line: "loading" }, { seq: 2, at: 5, line: `token=${REDACTED}` }])
    expect(first.mark).toEqual({ taken: 2, lines: 2, bytes: 7 + `token=${REDACTED}`.length, capped: false })
    expect(planLogAppend(first.mark, ["loading", "token=abcdef"], [], 6)).toBeUndefined()
    const second = planLogAppend(first.mark, ["loading", "token=abcdef", "", "done\r"], [], 7)!
    // The blank line is taken but not kept.
    expect(second.lines).toEqual([{ seq: 3, at: 7, line: "done" }])
    expect(second.mark.taken).toBe(4)
  })

  it("keeps the last drawing of a bar redrawn with carriage returns, without control characters", () => {
    const plan = planLogAppend(emptyLogMark, ["  0%|   | 0/50\r 50%|█  | 25/50\r100%|██| 50/50", "a\u0000b\u001bc"], [], 1)!
    expect(plan.lines.map((l) => l.line)).toEqual(["100%|██| 50/50", "a b c"])
  })

  it("reads a log shorter than the lines taken (a new generation's) from its start", () => {
    const mark = { taken: 5, lines: 5, bytes: 50, capped: false }
    expect(planLogAppend(mark, ["again"], [], 1)).toEqual({
      mark: { taken: 1, lines: 6, bytes: 55, capped: false },
      lines: [{ seq: 6, at: 1, line: "again" }]
    })
  })

  it("stops at the line cap with one marker line, then keeps nothing", () => {
    const reported = Array.from({ length: MAX_LOG_LINES * 2 }, (_, i) => `line ${i}`)
    const plan = planLogAppend(emptyLogMark, reported, [], 1)!
    expect(plan.lines).toHaveLength(MAX_LOG_LINES)
    expect(plan.lines[MAX_LOG_LINES - 2]!.line).toBe(`line ${MAX_LOG_LINES - 2}`)
    expect(plan.lines[MAX_LOG_LINES - 1]!.line).toBe(LOG_CAP_MARKER)
    expect(plan.mark).toMatchObject({ lines: MAX_LOG_LINES, capped: true, taken: MAX_LOG_LINES * 2 })
    expect(planLogAppend(plan.mark, [...reported, "more"], [], 2)).toBeUndefined()
  })

  it("stops at the byte cap with one marker line, the marker within the cap", () => {
    const long = "y".repeat(MAX_LOG_LINE_LENGTH)
    const reported = Array.from({ length: 500 }, () => long)
    const plan = planLogAppend(emptyLogMark, reported, [], 1)!
    expect(plan.mark.capped).toBe(true)
    expect(plan.mark.bytes).toBeLessThanOrEqual(MAX_LOG_BYTES)
    expect(plan.lines[plan.lines.length - 1]!.line).toBe(LOG_CAP_MARKER)
    expect(plan.lines.slice(0, -1).reduce((n, l) => n + l.line.length, 0) + LOG_CAP_MARKER.length).toBe(plan.mark.bytes)
    expect(plan.lines.length).toBe(Math.floor((MAX_LOG_BYTES - LOG_CAP_MARKER.length) / MAX_LOG_LINE_LENGTH) + 1)
  })
})

describe("progress", () => {
  it("moves only forward, whole and within 0-100", () => {
    expect(nextProgress(undefined, undefined)).toBeUndefined()
    expect(nextProgress(undefined, 0)).toBe(0)
    expect(nextProgress(10, 45.7)).toBe(45)
    expect(nextProgress(45, 45.2)).toBeUndefined()
    expect(nextProgress(60, 30)).toBeUndefined()
    expect(nextProgress(90, 140)).toBe(100)
    expect(nextProgress(undefined, -3)).toBe(0)
    expect(nextProgress(undefined, Number.NaN)).toBeUndefined()
  })

  it("reads the last percentage of progress-bar lines", () => {
    expect(lastPercentOf(["loading", " 12%|█  | 6/50", " 45%|████▌ | 23/50 [00:04<00:05]", "saving"])).toBe(45)
    expect(lastPercentOf(["  0%|  | 0/50\r 80%|██ | 40/50"])).toBe(80)
    expect(lastPercentOf(["Progress: 33%"])).toBe(33)
    expect(lastPercentOf(["100% of nothing", "seed 42"])).toBeUndefined()
    expect(lastPercentOf([])).toBeUndefined()
  })

  it("splits a log text into its complete lines", () => {
    expect(logTextLines(null)).toEqual([])
    expect(logTextLines("")).toEqual([])
    expect(logTextLines("a\nb\n")).toEqual(["a", "b"])
    expect(logTextLines("a\nb\n 40%|")).toEqual(["a", "b"])
  })
})
