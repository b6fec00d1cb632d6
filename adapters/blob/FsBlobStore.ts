import { Effect, Exit, Layer, Option, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { createReadStream } from "node:fs"
import { mkdir, open, opendir, readFile, rename, rm, stat, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { StoreError } from "../../src/domain/errors.js"
import { BlobStore, checkedPrefixes } from "../../src/ports/BlobStore.js"

/** Keys are engine-chosen names; anything that could leave the directory is refused. */
const SAFE_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/

const fail = (message: string) => (cause: unknown) => new StoreError({ message, cause })

/**
 * Whether a name starts with one of the prefixes, in one lookup per distinct prefix length: a
 * sweep matches a whole directory against a batch of jobs' prefixes.
 */
const prefixMatcher = (prefixes: ReadonlyArray<string>) => {
  const byLength = new Map<number, Set<string>>()
  for (const prefix of prefixes) byLength.set(prefix.length, (byLength.get(prefix.length) ?? new Set()).add(prefix))
  return (name: string) => [...byLength].some(([length, set]) => set.has(name.slice(0, length)))
}

/**
 * Files on the local disk, served by the bundled app under `baseUrl`. Each blob is two files:
 * the bytes and a sidecar holding its content type. Writes are atomic (see putStream).
 */
export const makeFsBlobStore = (options: { readonly dir: string; readonly baseUrl: string }) =>
  Effect.gen(function*() {
    const incoming = join(options.dir, ".incoming")
    yield* Effect.tryPromise({ try: () => mkdir(incoming, { recursive: true }), catch: fail("cannot create the blob directory") })
    const pathOf = (key: string) => join(options.dir, key)
    const checked = (key: string) =>
      SAFE_KEY.test(key) && !key.includes("..") ? Effect.succeed(key) : Effect.fail(new StoreError({ message: `unsafe blob key "${key}"` }))
    /**
     * Writes into a file under `.incoming` (a name no key can take), then renames it over the
     * key's file, so a reader sees the old file or the whole new one and a failed body leaves
     * nothing behind.
     */
    const putStream = <E>(key: string, contentType: string, body: Stream.Stream<Uint8Array, E>) => {
      const partial = join(incoming, `${key}.${randomBytes(6).toString("hex")}`)
      return Effect.gen(function*() {
        yield* checked(key)
        const size = yield* Effect.acquireUseRelease(
          Effect.tryPromise({ try: () => open(partial, "wx"), catch: fail(`cannot write blob ${key}`) }),
          (file) =>
            Stream.runFoldEffect(body, () => 0, (written, chunk) =>
              Effect.tryPromise({
                try: () => file.write(chunk).then(() => written + chunk.length),
                catch: fail(`cannot write blob ${key}`)
              })),
          (file) => Effect.promise(() => file.close())
        )
        yield* Effect.tryPromise({
          try: async () => {
            await writeFile(`${pathOf(key)}.type`, contentType)
            await rename(partial, pathOf(key))
          },
          catch: fail(`cannot write blob ${key}`)
        })
        return size
      }).pipe(
        Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.promise(() => rm(partial, { force: true })))
      )
    }
    const statOf = (key: string) =>
      readable(key, async () => {
        const [info, contentType] = await Promise.all([stat(pathOf(key)), readFile(`${pathOf(key)}.type`, "utf8")])
        return { size: info.size, contentType }
      })
    /** A missing blob, or a key that names none, is none; any other failure a StoreError. */
    const readable = <A>(key: string, run: () => Promise<A>) =>
      SAFE_KEY.test(key) && !key.includes("..") && !key.endsWith(".type")
        ? Effect.tryPromise({ try: run, catch: (cause) => cause }).pipe(
          Effect.map(Option.some),
          Effect.catch((cause) =>
            (cause as NodeJS.ErrnoException).code === "ENOENT"
              ? Effect.succeed(Option.none<A>())
              : Effect.fail(fail(`cannot read blob ${key}`)(cause))
          )
        )
        : Effect.succeed(Option.none<A>())
    return BlobStore.of({
      put: (key, blob) =>
        putStream(key, blob.contentType, Stream.make(blob.bytes)).pipe(
          Effect.as(`${options.baseUrl.replace(/\/$/, "")}/${encodeURIComponent(key)}`)
        ),
      putStream,
      get: (key, range) =>
        Effect.map(statOf(key), Option.map((file) => ({
          ...file,
          // Opened when the body is read; the file is replaced by rename, so an open read keeps its bytes.
          body: Stream.suspend(() =>
            Stream.fromAsyncIterable(
              createReadStream(pathOf(key), range) as AsyncIterable<Uint8Array>,
              fail(`cannot read blob ${key}`)
            )
          )
        }))),
      stat: statOf,
      remove: (key) =>
        checked(key).pipe(
          Effect.andThen(Effect.tryPromise({
            try: () => Promise.all([rm(pathOf(key), { force: true }), rm(`${pathOf(key)}.type`, { force: true })]),
            catch: fail(`cannot remove blob ${key}`)
          })),
          Effect.asVoid
        ),
      // One pass over the directory for all the prefixes; a blob's content-type sidecar starts with its key.
      removeByPrefix: (prefixes) =>
        Effect.flatMap(checkedPrefixes(prefixes), (checked) =>
          Effect.tryPromise({
            try: async () => {
              if (checked.length === 0) return 0
              const matches = prefixMatcher(checked)
              const names = new Set<string>()
              for await (const entry of await opendir(options.dir)) {
                if (entry.isFile() && matches(entry.name)) names.add(entry.name)
              }
              await Promise.all([...names].map((name) => rm(join(options.dir, name), { force: true })))
              return [...names].filter((name) => names.has(`${name}.type`)).length
            },
            catch: fail("cannot remove blobs by prefix")
          }))
    })
  })

export const layerFsBlobStore = (options: { readonly dir: string; readonly baseUrl: string }) =>
  Layer.effect(BlobStore, makeFsBlobStore(options))
