/**
 * The Idempotency-Key of a submit the AI SDK asks for. The AI SDK retries a call on a retryable
 * error (a lost answer, a 5xx) by calling the model again with the same call: the key must come
 * out the same, so the engine answers with the job it already charged for. Two separate calls of
 * the user, even with the same prompt, must not share one, or the second would get the first's job.
 *
 * One call is one headers object: `generateImage`, `generateSpeech` and
 * `experimental_generateVideo` build it once per user call (for a video start, once per start,
 * with the Idempotency-Key the AI SDK mints outside its retry loop) and hand the same object to
 * every retry. Its identity is that Idempotency-Key header when it has one (the AI SDK's, or the
 * user's own, which then also covers a retry from a restarted process), else a random id a
 * WeakMap keeps for as long as the call lives. Calls the AI SDK makes in parallel for one user
 * call (n images, one job each) share the object: each takes the lowest slot not in flight, and a
 * retry (which starts after its attempt failed and released its slot) takes it back.
 * The key hashes the model, the job's input, that identity and the slot (so a key the user reuses
 * across models or inputs cannot meet IDEMPOTENCY_KEY_REUSED).
 */

type CallHeaders = Record<string, string | undefined> | undefined

interface CallState {
  readonly id: string
  readonly inFlight: Set<number>
  /** Input files uploaded by this call, by content: a retry sends the same file URL, so the same body. */
  readonly uploads: Map<string, Promise<string>>
}

/** What one model call gets: its key, and the call's uploads to reuse. */
export interface Call {
  readonly keyFor: (model: string, input: unknown) => Promise<string>
  readonly uploads: Map<string, Promise<string>>
}

const hex = (bytes: ArrayBuffer | Uint8Array) =>
  Array.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("")
const randomId = () => hex(crypto.getRandomValues(new Uint8Array(16)))

export const sha256 = async (bytes: Uint8Array): Promise<string> => hex(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>))

const calls = new WeakMap<object, CallState>()

const headerKey = (headers: CallHeaders): string | undefined => {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (name.toLowerCase() === "idempotency-key" && value !== undefined && value !== "") return value
  }
  return undefined
}

const newState = (headers: CallHeaders): CallState => {
  const given = headerKey(headers)
  return { id: given === undefined ? `call:${randomId()}` : `header:${given}`, inFlight: new Set(), uploads: new Map() }
}

const stateOf = (headers: CallHeaders): CallState => {
  if (headers === undefined) return newState(headers)
  let state = calls.get(headers)
  if (state === undefined) {
    state = newState(headers)
    calls.set(headers, state)
  }
  return state
}

/** JSON with object keys sorted, so the same input hashes the same whatever order it was built in. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v)

/**
 * Runs one model call (`run`: its uploads, its submit and everything after, until it settles)
 * holding the call's slot. A slot released after the submit alone would let a parallel call's
 * retry take it while this call still waits for its job.
 */
export const withCall = async <A>(headers: CallHeaders, run: (call: Call) => Promise<A>): Promise<A> => {
  const state = stateOf(headers)
  let slot = 0
  while (state.inFlight.has(slot)) slot++
  state.inFlight.add(slot)
  try {
    return await run({
      keyFor: async (model, input) => `aisdk-${await sha256(new TextEncoder().encode(canonicalJson([model, input, state.id, slot])))}`,
      uploads: state.uploads
    })
  } finally {
    state.inFlight.delete(slot)
  }
}
