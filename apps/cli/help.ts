import type { CommandSpec, CommandTree, OptionSpec } from "./commandLine.js"

/** `--limit N`, `-o, --output FILE`, `--scope submit_job|check_status`. */
const optionLabel = (name: string, o: OptionSpec) => {
  const value = o.kind === "flag" ? "" : ` ${o.choices?.join("|") ?? o.value ?? (o.kind === "integer" ? "N" : "TEXT")}`
  return `${o.alias === undefined ? "" : `-${o.alias}, `}--${name}${value}`
}

const optionNote = (o: OptionSpec) =>
  [
    o.description,
    ...(o.required === true ? ["(required)"] : []),
    ...(o.repeated === true ? ["(repeatable)"] : []),
    ...(o.default === undefined ? [] : [`(default ${o.default})`])
  ].join(" ")

/** Two columns, the first as wide as its widest cell. */
const columns = (rows: ReadonlyArray<readonly [string, string]>) => {
  const width = Math.max(...rows.map(([left]) => left.length))
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`).join("\n")
}

const commandRows = (tree: CommandTree, prefix: ReadonlyArray<string>): Array<readonly [string, string]> =>
  Object.entries(tree).flatMap(([name, node]) =>
    "commands" in node ? commandRows(node.commands, [...prefix, name]) : [[[...prefix, name].join(" "), node.description] as const]
  )

/** The help of a group (the command list) or of one command (its arguments and options). Plain text, no colour. */
export const helpText = (tree: CommandTree, path: ReadonlyArray<string>, version: string): string => {
  let commands = tree
  let node: CommandTree[string] | undefined
  for (const name of path) {
    node = commands[name]
    if (node !== undefined && "commands" in node) commands = node.commands
  }
  const name = ["genjobs", ...path].join(" ")
  if (node === undefined || "commands" in node) {
    return [
      path.length === 0 ? `genjobs ${version}: operate a genjobs server (accounts, keys, catalog, jobs) or run one` : `${name}: ${node!.description}`,
      "",
      `Usage: ${name} <command> [options]`,
      "",
      "Commands:",
      columns(commandRows(commands, path)),
      "",
      `Run ${name} <command> --help for a command's options.`
    ].join("\n")
  }
  const spec = node as CommandSpec
  const args = (spec.args ?? []).map((a) => ` ${a.toUpperCase()}`).join("")
  return [
    `${name}: ${spec.description}`,
    "",
    `Usage: ${name}${args}${Object.keys(spec.options).length === 0 ? "" : " [options]"}`,
    "",
    "Options:",
    columns([...Object.entries(spec.options).map(([n, o]) => [optionLabel(n, o), optionNote(o)] as const), ["-h, --help", "This help"]]),
    ...(spec.more === undefined ? [] : ["", spec.more])
  ].join("\n")
}
