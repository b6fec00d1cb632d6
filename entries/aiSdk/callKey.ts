/**
 * The Idempotency-Key of a submit the AI SDK asks for. The AI SDK retries a call on a retryable
 * error (a lost answer, a 5xx) by calling the model again with the same call: the key must come
 * out the same, so the engine answers with the job it already charged for. Two separate calls of
 * the user, even with the same prompt, must not share one, or the second would get the first's job.
 *
 * What identifies one call:
 * - an `Idempotency-Key` header when the call has one: the AI SDK mints one for every video
 *   `doStart` (outside its retry loop), and a user may pass their own;
 * - otherwise the headers object itself: `generateImage`, `generateSpeech` and
 *   `experimental_generateVideo` build it once per user call and hand the same object to every
 *   retry, so a WeakMap gives it a random id that lives as long as the call.
 * Calls the AI SDK makes in parallel for one user call (n images, one job each) share that
 * object too: each takes the lowest slot not in flight, and a retry (which starts after its
 * attempt failed and released its slot) takes it back.
 * The key hashes the model, the job's input, that id and the slot (so a key the user reuses
 * across models or inputs cannot meet IDEMPOTENCY_KEY_REUSED).
 */

interface CallSlots {
  readonly id: string
  readonly inFlight: Set<number>
}

const hex = (bytes: ArrayBuffer | Uint8Array) =>
  Array.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("")
const randomId = () => hex(crypto.getRandomValues(new Uint8Array(16)))

const calls = new WeakMap<object, CallSlots>()
const byHeaderKey = new Map<string, CallSlots>()

const headerKey = (headers: Record<string, string | undefined> | undefined): string | undefined => {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (name.toLowerCase() === "idempotency-key" && value !== undefined && value !== "") return value
  }
  return undefined
}

const slotsOf = (headers: Record<string, string | undefined> | undefined): { readonly slots: CallSlots; readonly release: () => void } => {
  const given = headerKey(headers)
  if (given !== undefined) {
    // Kept only while a call with this key is in flight: afterwards the key itself says it all.
    const slots = byHeaderKey.get(given) ?? { id: `header:${given}`, inFlight: new Set<number>() }
    byHeaderKey.set(given, slots)
    return { slots, release: () => slots.inFlight.size === 0 && byHeaderKey.delete(given) }
  }
  if (headers === undefined) return { slots: { id: `call:${randomId()}`, inFlight: new Set() }, release: () => {} }
  let slots = calls.get(headers)
  if (slots === undefined) {
    slots = { id: `call:${randomId()}`, inFlight: new Set() }
    calls.set(headers, slots)
  }
  return { slots, release: () => {} }
}


/** JSON with object keys sorted, so the same input hashes the same whatever order it was built in. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v)

/** The key for one submit of `model` with `input`. */
export const deriveKey = async (model: string, input: unknown, callId: string, slot: number): Promise<string> =>
  `aisdk-${hex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonicalJson([model, input, callId, slot]))))}`

/**
 * Runs one model call (`run`: its submit and everything after, until it settles) holding the
 * call's slot, with the key of its submit (see above). A slot released after the submit alone
 * would let a parallel call's retry take it while this call still waits for its job.
 */
export const withCallKey = async <A>(
  headers: Record<string, string | undefined> | undefined,
  model: string,
  input: unknown,
  run: (idempotencyKey: string) => Promise<A>
): Promise<A> => {
  const { release, slots } = slotsOf(headers)
  let slot = 0
  while (slots.inFlight.has(slot)) slot++
  slots.inFlight.add(slot)
  try {
    return await run(await deriveKey(model, input, slots.id, slot))
  } finally {
    slots.inFlight.delete(slot)
    release()
  }
}
