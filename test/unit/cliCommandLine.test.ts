import { describe, expect, it } from "vitest"
import { parseCommandLine } from "../../apps/cli/commandLine.js"
import { commands } from "../../apps/cli/commands.js"
import { helpText } from "../../apps/cli/help.js"

const parse = (...argv: Array<string>) => parseCommandLine(commands, argv)

describe("the CLI's command line", () => {
  it("gives a command its options, checked and typed, and its arguments", () => {
    expect(parse("accounts", "create", "--name", "Acme", "--credits", "500", "--segment", "pro", "--segment", "beta", "--json")).toEqual({
      _tag: "Run",
      path: ["accounts", "create"],
      input: {
        args: [],
        options: {
          url: undefined, "admin-token": undefined, json: true,
          name: "Acme", credits: 500, "max-concurrent-jobs": undefined, segment: ["pro", "beta"], "allow-model": []
        }
      }
    })
    const credit = parse("accounts", "credit", "acc_1", "--micro-cents", "-3")
    expect(credit).toMatchObject({ _tag: "Run", input: { args: ["acc_1"], options: { "micro-cents": -3 } } })
    expect(parse("catalog", "apply", "c.json", "-y")).toMatchObject({ _tag: "Run", input: { args: ["c.json"], options: { yes: true } } })
    expect(parse("jobs", "list")).toMatchObject({ _tag: "Run", input: { options: { limit: 20, all: false, status: undefined } } })
  })

  it("refuses what the command does not take, saying what is wrong", () => {
    const usage = (argv: Array<string>) => {
      const parsed = parse(...argv)
      return parsed._tag === "Usage" ? parsed.message : parsed._tag
    }
    expect(usage(["accounts", "create"])).toBe("--name is required")
    expect(usage(["accounts", "list", "--limit", "ten"])).toBe(`--limit must be a whole number, not "ten"`)
    expect(usage(["jobs", "list", "--status", "done"])).toBe(`--status must be one of pending, processing, completed, failed, cancelled, not "done"`)
    expect(usage(["keys", "create", "--name", "k"])).toBe("takes ACCOUNT-ID, was given none")
    expect(usage(["serve", "--port", "1"])).toMatch(/^Unknown option '--port'/)
    expect(usage(["accounts"])).toBe("a subcommand is missing")
    expect(usage(["acounts", "list"])).toBe("unknown command acounts")
    expect(parse("accounts", "list", "--bogus", "--json")).toMatchObject({ _tag: "Usage", json: true })
  })

  it("asks for help or the version anywhere on the line", () => {
    expect(parse("--help")).toEqual({ _tag: "Help", path: [] })
    expect(parse("accounts", "-h")).toEqual({ _tag: "Help", path: ["accounts"] })
    expect(parse("accounts", "list", "--limit", "x", "--help")).toEqual({ _tag: "Help", path: ["accounts", "list"] })
    expect(parse("--version")).toEqual({ _tag: "Version" })
  })

  it("lists every command in the help, and each command's options in its own", () => {
    const top = helpText(commands, [], "1.2.3")
    for (const line of ["serve", "migrate", "accounts create", "accounts list", "accounts credit", "keys create", "keys deactivate",
      "catalog validate", "catalog apply", "catalog export", "jobs list", "jobs get"]) {
      expect(top).toMatch(new RegExp(`\\n  ${line} +\\S`))
    }
    const list = helpText(commands, ["jobs", "list"], "1.2.3")
    expect(list).toContain("Usage: genjobs jobs list [options]")
    expect(list).toMatch(/--status pending\|processing\|completed\|failed\|cancelled +Only jobs in this status/)
    expect(list).toMatch(/--limit N +Jobs per page \(1 to 100\) \(default 20\)/)
    expect(helpText(commands, ["keys", "create"], "1.2.3")).toContain("Usage: genjobs keys create ACCOUNT-ID [options]")
    expect(top + list).not.toMatch(/\u001b/)
  })
})
