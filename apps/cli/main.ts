#!/usr/bin/env node
import "../quietSqliteWarning.js"
import { runCli } from "./run.js"

/**
 * `genjobs`: the operator's command line, over the admin API of a running server. See docs/cli.md.
 * The process's words, environment and streams for runCli, which the tests call in-process.
 */
const code = await runCli(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  // Only a terminal can be asked (`catalog apply` without --yes); a pipe or a file cannot answer.
  ask: process.stdin.isTTY
    ? async (question) => {
      const { createInterface } = await import("node:readline/promises")
      const terminal = createInterface({ input: process.stdin, output: process.stderr })
      try {
        return await terminal.question(question)
      } finally {
        terminal.close()
      }
    }
    : undefined
})
// `serve` answers 0 once the server runs: the server sets the exit code when it stops.
if (code !== 0) process.exitCode = code
