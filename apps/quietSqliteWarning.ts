/**
 * Node 22 prints "ExperimentalWarning: SQLite is an experimental feature and might change at any
 * time" when the SQLite store loads `node:sqlite` (Node 24 does not). The bundled server and the
 * CLI are ours to keep quiet: they drop that one warning and pass every other, of every type, on
 * to Node as it is. Imported first by each entry, before anything can load `node:sqlite`. A host
 * embedding the engine on Node 22 sees the warning (its process, its choice: docs/embedding.md).
 */
const emitWarning = process.emitWarning

const isSqliteWarning = (warning: string | Error, options: unknown): boolean => {
  const type = typeof options === "string" ? options : (options as { type?: unknown } | undefined)?.type
  const message = typeof warning === "string" ? warning : warning.message
  const name = typeof warning === "string" ? type : warning.name
  return name === "ExperimentalWarning" && message.startsWith("SQLite is an experimental feature")
}

process.emitWarning = function(this: unknown, warning: string | Error, ...rest: Array<unknown>) {
  if (isSqliteWarning(warning, rest[0])) return
  return Reflect.apply(emitWarning, this, [warning, ...rest])
} as typeof process.emitWarning
