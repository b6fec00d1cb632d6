import * as Context from "effect/Context"

/** What a command writes to and asks on: the process's streams in main.ts, buffers in the tests. */
export interface Streams {
  /** Writes the text as it is (the caller ends its lines). */
  readonly stdout: (text: string) => void
  readonly stderr: (text: string) => void
  /** Asks a question and answers the reply; absent when there is no terminal to ask on. */
  readonly ask?: ((question: string) => Promise<string>) | undefined
}

export interface CliIoShape extends Streams {
  /** The environment the command reads its defaults from (GENJOBS_URL, DATABASE_URL, ...). */
  readonly env: Readonly<Record<string, string | undefined>>
}

/**
 * The command's surroundings, given to it rather than read from `process`, so that the whole
 * command line runs in-process too (runCli). effect/Effect loads Context already: nothing more loads.
 */
export class CliIo extends Context.Service<CliIo, CliIoShape>()("genjobs/cli/CliIo") {}
