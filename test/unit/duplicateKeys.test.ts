import { describe, expect, it } from "vitest"
import { surveyJson } from "../../src/domain/limits.js"
import { countKeys, findDuplicateKey } from "../../src/http/duplicateKeys.js"

/** The scan of a text JSON.parse accepts (as the engine only scans such text). */
const scan = (text: string) => {
  JSON.parse(text)
  return findDuplicateKey(text)
}

describe("duplicate keys in JSON text", () => {
  it("finds a key repeated at the top level, with its path", () => {
    expect(scan(`{"creditsMicroCents":1,"creditsMicroCents":1000000000000000}`)).toEqual({
      key: "creditsMicroCents",
      path: ["creditsMicroCents"]
    })
    expect(scan(`{ "a" : 1 , "b" : 2 ,\n\t"a" : 3 }`)).toEqual({ key: "a", path: ["a"] })
  })

  it("finds nothing in JSON without repeated keys, whatever its top-level value", () => {
    for (const text of [`{}`, `[]`, `"a"`, `1`, `null`, `{"a":1,"b":{"a":2},"c":[{"a":3}]}`, `[{"a":1},{"a":2}]`, `{"":1,"a":""}`]) {
      expect([text, scan(text)]).toEqual([text, undefined])
    }
  })

  it("finds one nested in objects and arrays, with the path to it", () => {
    expect(scan(`{"model":"m","input":{"prompt":"x","prompt":"y"}}`)).toEqual({ key: "prompt", path: ["input", "prompt"] })
    expect(scan(`{"discounts":[{"kind":"a"},{"kind":"b","percentage":1,"kind":"c"}]}`)).toEqual({
      key: "kind",
      path: ["discounts", 1, "kind"]
    })
    expect(scan(`[[1,2],[3,{"x":[{}, {"y":1,"y":2}]}]]`)).toEqual({ key: "y", path: [1, 1, "x", 1, "y"] })
  })

  it("allows the same key in sibling objects and at other depths", () => {
    expect(scan(`{"a":{"a":{"a":1}},"b":{"a":1},"c":[{"a":1},{"a":1}]}`)).toBeUndefined()
    // A key named after a closed object that held it is the outer object's first.
    expect(scan(`{"o":{"k":1},"k":2}`)).toBeUndefined()
    // The outer object still remembers its keys after an inner one closes.
    expect(scan(`{"k":1,"o":{"k":1},"k":2}`)).toEqual({ key: "k", path: ["k"] })
  })

  it("does not take text inside string values for keys", () => {
    expect(scan(`{"x":"\\"a\\":1","a":1}`)).toBeUndefined()
    expect(scan(`{"x":"{\\"a\\":1,\\"a\\":2}"}`)).toBeUndefined()
    expect(scan(`{"a":"}","b":"{","c":"[","d":"]","e":",","f":":"}`)).toBeUndefined()
    expect(scan(`{"a":"\\\\","b":"\\\\\\"","a":0}`)).toEqual({ key: "a", path: ["a"] })
    // A value ending in an escaped backslash: its closing quote is not escaped.
    expect(scan(`{"a":"x\\\\","a":1}`)).toEqual({ key: "a", path: ["a"] })
  })

  it("compares keys unescaped", () => {
    expect(scan(`{"a":1,"\\u0061":2}`)).toEqual({ key: "a", path: ["a"] })
    expect(scan(`{"\\u0061":1,"a":2}`)).toEqual({ key: "a", path: ["a"] })
    expect(scan(`{"\\u0041":1,"a":2}`)).toBeUndefined()
    expect(scan(`{"q\\"":1,"q\\u0022":2}`)).toEqual({ key: "q\"", path: ["q\""] })
    expect(scan(`{"b\\\\":1,"b\\u005c":2}`)).toEqual({ key: "b\\", path: ["b\\"] })
    expect(scan(`{"\\/":1,"/":2}`)).toEqual({ key: "/", path: ["/"] })
    expect(scan(`{"\\n":1,"\\u000a":2}`)).toEqual({ key: "\n", path: ["\n"] })
    // A key ending in a backslash, then one ending in a quote: different keys.
    expect(scan(`{"k\\\\":1,"k\\"":2}`)).toBeUndefined()
  })

  it("compares surrogate pairs as the characters they write", () => {
    expect(scan(`{"😀":1,"\\ud83d\\ude00":2}`)).toEqual({ key: "😀", path: ["😀"] })
    expect(scan(`{"\\uD83D\\uDE00":1,"😀":2}`)).toEqual({ key: "😀", path: ["😀"] })
    expect(scan(`{"😀":1,"😁":2,"\\ud83d":3,"\\ude00":4}`)).toBeUndefined()
    expect(scan(`{"é":1,"\\u00e9":2}`)).toEqual({ key: "é", path: ["é"] })
    // Precomposed and decomposed forms are different keys, as they are to JSON.parse.
    expect(scan(`{"é":1,"e\\u0301":2}`)).toBeUndefined()
  })

  it("takes the empty key as a key", () => {
    expect(scan(`{"":1,"":2}`)).toEqual({ key: "", path: [""] })
    expect(scan(`{"":{"":1},"x":[{"":1}]}`)).toBeUndefined()
  })

  it("scans deep nesting without recursion", () => {
    const depth = 100_000
    expect(scan(`${"[".repeat(depth)}{"a":1,"a":2}${"]".repeat(depth)}`)?.path).toHaveLength(depth + 1)
    expect(scan(`${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}`)).toBeUndefined()
  })

  it("counts the keys a text writes, repeated ones too, and strings that are no keys not at all", () => {
    const cases: Array<[string, number]> = [
      [`1`, 0],
      [`"a"`, 0],
      [`["a","b",{}]`, 0],
      [`{"a":"b"}`, 1],
      [`{ "a" : "b" , "c"\n:\t["d", "e:", {"f":1}] }`, 3],
      [`{"a":1,"a":2}`, 2],
      [`{"x":"\\":", "y\\"":"\\\\"}`, 2],
      [`[{"":""},{"":""}]`, 2]
    ]
    for (const [text, keys] of cases) expect([text, countKeys(text)]).toEqual([text, keys])
  })

  it("counts as many keys as the parsed value has members exactly when none repeats", () => {
    for (const text of [`{"a":{"a":1},"b":[{"a":1},{"b":{}}],"c":"\\"d\\":1"}`, `[[{"x":1}],{"":{"":[]}}]`, `"s"`]) {
      expect([text, surveyJson(JSON.parse(text)).members]).toEqual([text, countKeys(text)])
    }
    // JSON.parse makes `__proto__` an own member like any other key.
    for (const text of [`{"__proto__":{"x":1},"constructor":1}`, `{"0":1,"00":2,"1e0":3}`]) {
      expect([text, surveyJson(JSON.parse(text)).members]).toEqual([text, countKeys(text)])
    }
    expect(scan(`{"__proto__":1,"__proto__":2}`)).toEqual({ key: "__proto__", path: ["__proto__"] })
    expect(countKeys(`{"__proto__":1,"__proto__":2}`) - surveyJson(JSON.parse(`{"__proto__":1,"__proto__":2}`)).members).toBe(1)
    const repeated = `{"a":1,"b":{"c":1,"\\u0063":2},"a":3}`
    expect(countKeys(repeated) - surveyJson(JSON.parse(repeated)).members).toBe(2)
  })

  it("finds what JSON.parse would fold, on generated bodies", () => {
    // A seeded generator: the same bodies on every run.
    let seed = 7
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647
    const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(random() * items.length)]!
    const spellings: Record<string, ReadonlyArray<string>> = {
      a: [`"a"`, `"\\u0061"`],
      "a\"b": [`"a\\"b"`, `"a\\u0022b"`],
      "{": [`"{"`, `"\\u007b"`],
      "": [`""`]
    }
    const names = Object.keys(spellings)
    let injected = 0
    const value = (depth: number): string => {
      const kind = depth > 4 ? 0 : Math.floor(random() * 3)
      if (kind === 0) return pick([`1`, `"x"`, `"\\"a\\":1"`, `null`, `"}"`])
      if (kind === 1) return `[${Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1)).join(",")}]`
      const members = names.filter(() => random() < 0.5).map((name) => `${pick(spellings[name]!)}:${value(depth + 1)}`)
      if (members.length > 0 && random() < 0.05) {
        injected++
        const repeated = names.find((name) => members.some((m) => spellings[name]!.some((s) => m.startsWith(`${s}:`))))!
        members.push(`${pick(spellings[repeated]!)}:0`)
      }
      return `{${members.join(",")}}`
    }
    let found = 0
    for (let n = 0; n < 2_000; n++) {
      const before = injected
      const text = value(0)
      const duplicate = scan(text)
      expect([text, duplicate !== undefined]).toEqual([text, injected > before])
      // The cheap test the engine makes first agrees.
      expect([text, countKeys(text) > surveyJson(JSON.parse(text)).members]).toEqual([text, injected > before])
      if (duplicate !== undefined) found++
    }
    expect(found).toBeGreaterThan(50)
  })

  it("stays linear on inputs that would be quadratic to a naive scan", () => {
    const timed = (text: string) => {
      JSON.parse(text)
      // CPU time, not wall time: a shared machine's load stretches the wall clock, not the work.
      const started = process.cpuUsage()
      const result = findDuplicateKey(text)
      countKeys(text)
      const used = process.cpuUsage(started)
      return { result, ms: (used.user + used.system) / 1_000 }
    }
    const n = 100_000
    // Many keys in one object (about 1.4 MB): a pairwise comparison would make 5e9 of them.
    const many = timed(`{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(",")},"k${n - 1}":0}`)
    expect(many.result).toEqual({ key: `k${n - 1}`, path: [`k${n - 1}`] })
    // Many escaped keys, and long runs of backslashes before quotes.
    const escaped = timed(`{${Array.from({ length: n }, (_, i) => `"\\u006b${i}":1`).join(",")}}`)
    expect(escaped.result).toBeUndefined()
    const backslashes = timed(`{"a":"${"\\\\".repeat(n)}${"\\\"".repeat(n)}","a":1}`)
    expect(backslashes.result).toEqual({ key: "a", path: ["a"] })
    // Generous bounds (each takes a few ms of CPU): a quadratic scan takes seconds to minutes here.
    expect([many.ms, escaped.ms, backslashes.ms].every((ms) => ms < 1_000)).toBe(true)
  })
})
