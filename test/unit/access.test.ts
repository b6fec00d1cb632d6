import { describe, expect, it } from "vitest"
import { hasScope, invalidAllowedEntries, ipAllowed } from "../../src/domain/access.js"

describe("scopes", () => {
  it("grants everything with an empty list and only the listed scopes otherwise", () => {
    expect(hasScope([], "submit_job")).toBe(true)
    expect(hasScope(["check_status"], "check_status")).toBe(true)
    expect(hasScope(["check_status"], "submit_job")).toBe(false)
    expect(hasScope(["submit_job"], "list_models")).toBe(false)
  })
})

describe("IP allow-lists", () => {
  const cases: Array<[Array<string>, string | undefined, boolean]> = [
    [[], undefined, true],
    [[], "198.51.100.7", true],
    [["198.51.100.7"], "198.51.100.7", true],
    [["198.51.100.7"], "198.51.100.8", false],
    [["10.0.0.0/8"], "10.200.3.4", true],
    [["10.0.0.0/8"], "11.0.0.1", false],
    [["10.0.0.0/8"], "::ffff:10.1.2.3", true],
    [["::ffff:10.0.0.0/104"], "10.9.9.9", true],
    [["::ffff:10.0.0.1"], "10.0.0.1", true],
    [["2001:db8::/32"], "2001:db8:1::5", true],
    [["2001:db8::/32"], "2001:db9::1", false],
    [["::1"], "[::1]", true],
    [["fe80::/10"], "fe80::1%eth0", true],
    [["10.0.0.0/8"], "::a00:1", false],
    [["10.0.0.0/8"], undefined, false],
    [["10.0.0.0/8"], "not-an-ip", false]
  ]
  for (const [allowed, client, expected] of cases) {
    it(`${JSON.stringify(allowed)} ${expected ? "allows" : "refuses"} ${client}`, () => {
      expect(ipAllowed(allowed, client)).toBe(expected)
    })
  }

  it("reports entries that are neither an address nor a CIDR range", () => {
    expect(invalidAllowedEntries(["10.0.0.0/33", "abc", "1.2.3", "::1/129", "10.0.0.0/8", "::1", " 192.0.2.1 "])).toEqual([
      "10.0.0.0/33",
      "abc",
      "1.2.3",
      "::1/129"
    ])
  })
})
