import type { CommandSpec, CommandTree, Input, Options } from "./commandLine.js"
import type { CliError } from "./errors.js"
import type { CliIo } from "./io.js"
import type { Effect } from "effect/Effect"

/** The options every command that talks to a server takes. */
export const connection = {
  url: { kind: "text", value: "URL", description: "The server's URL (default GENJOBS_URL, else http://localhost:3000)" },
  "admin-token": { kind: "text", value: "TOKEN", description: "An admin token of the server (default GENJOBS_ADMIN_TOKEN)" },
  json: { kind: "flag", description: "Print JSON for scripts instead of tables" }
} as const satisfies Options

export const json = { json: connection.json } as const

const paging = (what: string) => ({
  limit: { kind: "integer", default: 20, description: `${what} per page (1 to 100)` },
  cursor: { kind: "text", value: "C", description: "The next page, as the previous one named it" },
  all: { kind: "flag", description: "Every page, not just the first" }
}) as const

const budget = {
  kind: "text",
  value: "LIMIT/PERIOD",
  description: "A budget in micro-cents per day, month (UTC) or total, as 5000000/month ($5 a month); none removes it"
} as const

export const accountsCreate = {
  name: { kind: "text", required: true, description: "The account's name" },
  credits: { kind: "integer", value: "MICRO_CENTS", default: 0, description: "Opening balance in micro-cents (1,000,000 = $1)" },
  "max-concurrent-jobs": { kind: "integer", description: "Jobs it may run at once (default the server's)" },
  segment: { kind: "text", repeated: true, description: "A segment" },
  "allow-model": { kind: "text", value: "SLUG", repeated: true, description: "A private model's slug" },
  budget,
  ...connection
} as const satisfies Options

export const accountsUpdate = {
  name: { kind: "text", description: "A new name" },
  "max-concurrent-jobs": { kind: "integer", description: "Jobs it may run at once" },
  budget,
  ...connection
} as const satisfies Options

export const accountsList = {
  search: { kind: "text", description: "A fragment of the name or id" },
  ...paging("Accounts"),
  ...connection
} as const satisfies Options

export const accountsCredit = {
  "micro-cents": { kind: "integer", required: true, description: "How much to add, in micro-cents (1,000,000 = $1)" },
  ...connection
} as const satisfies Options

export const keysCreate = {
  name: { kind: "text", required: true, description: "To tell keys apart" },
  scope: { kind: "text", repeated: true, choices: ["submit_job", "check_status", "list_models"], description: "A scope (none means all)" },
  "allow-ip": { kind: "text", value: "IP_OR_CIDR", repeated: true, description: "An address or CIDR range (none means any)" },
  "expires-at": { kind: "text", value: "ISO", description: "ISO 8601 time the key stops working" },
  budget,
  ...connection
} as const satisfies Options

export const keysUpdate = {
  budget: { ...budget, required: true },
  ...connection
} as const satisfies Options

export const catalogApply = {
  yes: { kind: "flag", alias: "y", description: "Apply without asking" },
  ...connection
} as const satisfies Options

export const catalogExport = {
  output: { kind: "text", value: "FILE", alias: "o", description: "Write to this file instead of stdout" },
  ...connection
} as const satisfies Options

export const spendOptions = {
  "group-by": { kind: "text", value: "DIMS", description: "One or two of account, key, model, day, hour, comma-separated (default day)" },
  account: { kind: "text", value: "ID", description: "Only this account's spend" },
  from: { kind: "text", value: "ISO", description: "From this ISO 8601 time (default 30 days before --to)" },
  to: { kind: "text", value: "ISO", description: "Before this ISO 8601 time (default the end of this hour; at most 366 days after --from)" },
  ...connection
} as const satisfies Options

export const jobsList = {
  account: { kind: "text", value: "ID", description: "Only this account's jobs" },
  status: { kind: "text", choices: ["pending", "processing", "completed", "failed", "cancelled"], description: "Only jobs in this status" },
  model: { kind: "text", value: "SLUG", description: "A model slug" },
  since: { kind: "text", value: "ISO", description: "Created at or after this ISO 8601 time" },
  until: { kind: "text", value: "ISO", description: "Created before this ISO 8601 time" },
  ...paging("Jobs"),
  ...connection
} as const satisfies Options

/** A command and the module that runs it, loaded only when it is the one asked for. */
export interface Runnable<O extends Options = Options> extends CommandSpec<O> {
  readonly load: () => Promise<(input: Input<O>) => Effect<void, CliError, CliIo>>
}

const command = <O extends Options>(spec: Runnable<O>) => spec

/** Every command of `genjobs`, as docs/cli.md lists them. */
export const commands = {
  // Runs the bundled server in this process (run.ts): no options, the environment configures it.
  serve: {
    description: "Start the bundled server, as npm start does (configured by environment variables; docs/configuration.md)",
    options: {}
  },
  migrate: command({
    description: "Run the store migrations for DATABASE_URL (or SQLite in DATA_DIR) and exit",
    options: json,
    load: () => import("./server.js").then((m) => m.migrate)
  }),
  accounts: {
    description: "Create, list, credit and update accounts",
    commands: {
      create: command({ description: "Create an account", options: accountsCreate, load: () => import("./accounts.js").then((m) => m.create) }),
      list: command({ description: "List accounts, newest first", options: accountsList, load: () => import("./accounts.js").then((m) => m.list) }),
      credit: command({
        description: "Add credit to an account through its ledger",
        args: ["account-id"],
        options: accountsCredit,
        load: () => import("./accounts.js").then((m) => m.credit)
      }),
      update: command({
        description: "Change an account's name, concurrent-job limit or budget",
        args: ["account-id"],
        options: accountsUpdate,
        load: () => import("./accounts.js").then((m) => m.update)
      })
    }
  },
  keys: {
    description: "Create, update and deactivate API keys",
    commands: {
      create: command({
        description: "Create an API key; its secret is printed once",
        args: ["account-id"],
        options: keysCreate,
        load: () => import("./keys.js").then((m) => m.create)
      }),
      update: command({
        description: "Set or remove an API key's budget",
        args: ["key-id"],
        options: keysUpdate,
        load: () => import("./keys.js").then((m) => m.update)
      }),
      deactivate: command({
        description: "Deactivate an API key: it is refused from now on",
        args: ["key-id"],
        options: connection,
        load: () => import("./keys.js").then((m) => m.deactivate)
      })
    }
  },
  catalog: {
    description: "Validate, apply and export the model catalog",
    commands: {
      validate: command({
        description: "Check a catalog file as the server would, without a server",
        args: ["file"],
        options: json,
        load: () => import("./catalog.js").then((m) => m.validate)
      }),
      apply: command({
        description: "Replace the server's catalog with a file, after showing what changes",
        args: ["file"],
        options: catalogApply,
        load: () => import("./catalog.js").then((m) => m.apply)
      }),
      export: command({
        description: "Write the server's catalog document",
        options: catalogExport,
        load: () => import("./catalog.js").then((m) => m.exportCatalog)
      })
    }
  },
  spend: command({
    description: "Spend from the hourly rollups: charges, refunds, jobs and failures by account, key, model, day or hour",
    options: spendOptions,
    load: () => import("./spend.js").then((m) => m.spend)
  }),
  jobs: {
    description: "List and inspect jobs across accounts",
    commands: {
      list: command({ description: "List jobs across accounts, newest first", options: jobsList, load: () => import("./jobs.js").then((m) => m.list) }),
      get: command({
        description: "Show any job: input, outputs, error",
        args: ["job-id"],
        options: connection,
        load: () => import("./jobs.js").then((m) => m.get)
      })
    }
  }
} satisfies CommandTree
