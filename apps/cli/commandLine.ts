import { parseArgs } from "node:util"

/**
 * The command line's shape: commands, their arguments and options, parsed with node:util's
 * parseArgs. This module and the command table load nothing else, so `--help` and a wrong
 * option answer at once and each command loads only its own module (docs/decisions.md).
 */
export interface OptionSpec {
  /** `text` takes a value, `integer` a whole number, `flag` none. */
  readonly kind: "text" | "integer" | "flag"
  readonly description: string
  /** What the help shows for the value: `--limit N`. */
  readonly value?: string
  readonly alias?: string
  /** May be given more than once; the values in order. */
  readonly repeated?: boolean
  readonly choices?: ReadonlyArray<string>
  readonly required?: boolean
  readonly default?: number
}

export type Options = Readonly<Record<string, OptionSpec>>

/** What an option gives the command: absent optional values are undefined. */
type ValueOf<O extends OptionSpec> = O["kind"] extends "flag" ? boolean
  : O["repeated"] extends true ? ReadonlyArray<string>
  : O["kind"] extends "integer" ? (O extends { required: true } | { default: number } ? number : number | undefined)
  : O extends { required: true } ? string
  : string | undefined

export interface Input<O extends Options = Options> {
  /** The positional arguments, as many as the command names. */
  readonly args: ReadonlyArray<string>
  readonly options: { readonly [K in keyof O]: ValueOf<O[K]> }
}

export interface CommandSpec<O extends Options = Options> {
  readonly description: string
  readonly args?: ReadonlyArray<string>
  readonly options: O
  /** Says the command's examples or details under its options. */
  readonly more?: string
}

export type Parsed =
  | { readonly _tag: "Run"; readonly path: ReadonlyArray<string>; readonly input: Input }
  | { readonly _tag: "Help"; readonly path: ReadonlyArray<string> }
  | { readonly _tag: "Version" }
  | { readonly _tag: "Usage"; readonly path: ReadonlyArray<string>; readonly message: string; readonly json: boolean }

/** Commands by name; a group holds more commands. */
export type CommandTree = { readonly [name: string]: CommandSpec | { readonly description: string; readonly commands: CommandTree } }

const isGroup = (node: CommandTree[string]): node is { readonly description: string; readonly commands: CommandTree } =>
  "commands" in node

/** The command the words name, and the words after it. */
export const findCommand = (tree: CommandTree, argv: ReadonlyArray<string>) => {
  const path: Array<string> = []
  let node: CommandTree[string] | undefined
  let commands = tree
  for (const word of argv) {
    const next = commands[word]
    if (next === undefined) break
    path.push(word)
    node = next
    if (!isGroup(next)) break
    commands = next.commands
  }
  return { path, node, rest: argv.slice(path.length) }
}

/** `--credits -5`: a negative number as the value, which parseArgs would take for an option. */
const joinNegativeValues = (words: ReadonlyArray<string>, options: Options): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    const spec = word.startsWith("--") ? options[word.slice(2)] : undefined
    const next = words[i + 1]
    if (spec !== undefined && spec.kind !== "flag" && next !== undefined && /^-\d/.test(next)) {
      out.push(`${word}=${next}`)
      i++
    } else out.push(word)
  }
  return out
}

const checkValue = (name: string, spec: OptionSpec, raw: string): number | string => {
  if (spec.choices !== undefined && !spec.choices.includes(raw)) {
    throw new Error(`--${name} must be one of ${spec.choices.join(", ")}, not "${raw}"`)
  }
  if (spec.kind !== "integer") return raw
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new Error(`--${name} must be a whole number, not "${raw}"`)
  return Number(raw)
}

/** The options and arguments after the command's name, checked against its spec. */
export const parseInput = (spec: CommandSpec, words: ReadonlyArray<string>): Input => {
  const { values, positionals } = parseArgs({
    args: joinNegativeValues(words, spec.options),
    options: Object.fromEntries(
      Object.entries(spec.options).map(([name, o]) => [
        name,
        { type: o.kind === "flag" ? "boolean" as const : "string" as const, multiple: o.repeated === true, ...(o.alias === undefined ? {} : { short: o.alias }) }
      ])
    ),
    allowPositionals: true,
    strict: true
  })
  const expected = spec.args ?? []
  if (positionals.length !== expected.length) {
    throw new Error(expected.length === 0
      ? `takes no arguments, was given ${positionals.join(" ")}`
      : `takes ${expected.map((a) => a.toUpperCase()).join(" ")}, was given ${positionals.length === 0 ? "none" : positionals.join(" ")}`)
  }
  const options: Record<string, unknown> = {}
  for (const [name, o] of Object.entries(spec.options)) {
    const given = values[name]
    if (o.kind === "flag") options[name] = given === true
    else if (o.repeated === true) options[name] = ((given ?? []) as Array<string>).map((v) => checkValue(name, o, v))
    else if (given === undefined) {
      if (o.required === true) throw new Error(`--${name} is required`)
      options[name] = o.default
    } else options[name] = checkValue(name, o, given as string)
  }
  // Each value was checked against its spec above, as ValueOf describes it.
  return { args: positionals, options: options as Input["options"] }
}

const wantsJson = (words: ReadonlyArray<string>) => words.includes("--json")

/** What to do with the words after `genjobs`: run a command, print help or the version, or refuse them. */
export const parseCommandLine = (tree: CommandTree, argv: ReadonlyArray<string>): Parsed => {
  if (argv.length === 1 && argv[0] === "--version") return { _tag: "Version" }
  const { node, path, rest } = findCommand(tree, argv)
  if (rest.includes("--help") || rest.includes("-h")) return { _tag: "Help", path }
  if (node === undefined || isGroup(node)) {
    const message = rest.length === 0
      ? `${path.length === 0 ? "a command" : "a subcommand"} is missing`
      : `unknown command ${[...path, rest[0]].join(" ")}`
    return { _tag: "Usage", path, message, json: wantsJson(rest) }
  }
  try {
    return { _tag: "Run", path, input: parseInput(node, rest) }
  } catch (error) {
    return { _tag: "Usage", path, message: (error as Error).message.split("\n")[0]!, json: wantsJson(rest) }
  }
}
