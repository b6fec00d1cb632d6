/**
 * JSON.parse keeps the last of two equal keys in one object; a proxy or an audit layer that keeps
 * the first reads another request than the one executed. This finds such a key in JSON's text.
 */

/** A key named twice in one object: the key, unescaped, and the path to its second naming. */
export interface DuplicateKey {
  readonly key: string
  /** Each step from the top-level value to the repeated member: object keys and array indexes. */
  readonly path: ReadonlyArray<string | number>
}

const QUOTE = 34 // "
const BACKSLASH = 92 // \
const OPEN_OBJECT = 123 // {
const CLOSE_OBJECT = 125 // }
const OPEN_ARRAY = 91 // [
const CLOSE_ARRAY = 93 // ]
const COMMA = 44 // ,
const COLON = 58 // :

/** The index of the quote ending the string whose opening quote is at `start`: the first one after an even run of backslashes. */
const endOfString = (text: string, start: number): number => {
  for (let quote = text.indexOf("\"", start + 1);; quote = text.indexOf("\"", quote + 1)) {
    let before = quote - 1
    while (text.charCodeAt(before) === BACKSLASH) before--
    if ((quote - 1 - before) % 2 === 0) return quote
  }
}

const isSpace = (code: number) => code === 32 || code === 10 || code === 13 || code === 9

/**
 * How many keys the objects of JSON `text` write, repeated ones included: the strings a colon
 * follows. `text` must be JSON that JSON.parse accepted. It hops from string to string with
 * indexOf, so it costs about a tenth of JSON.parse; compared with the members of the parsed
 * value (which keeps one per distinct key), it tells whether any key repeats without comparing
 * keys, and `findDuplicateKey` then runs only on a body that is refused.
 */
export const countKeys = (text: string): number => {
  let keys = 0
  for (let open = text.indexOf("\""); open !== -1;) {
    let after = endOfString(text, open) + 1
    while (isSpace(text.charCodeAt(after))) after++
    if (text.charCodeAt(after) === COLON) keys++
    open = text.indexOf("\"", after)
  }
  return keys
}

/**
 * The first key a JSON object of `text` names twice, compared after unescaping (`"a"` and
 * `"\u0061"` are one key), or undefined. `text` must be JSON that JSON.parse accepted: the scan
 * checks nothing else. One pass, no recursion; a key with no backslash is compared as it is
 * written, only one with escapes is unescaped. The sets of keys are kept one per depth and
 * reused, so a body of many small objects allocates none after its first.
 */
export const findDuplicateKey = (text: string): DuplicateKey | undefined => {
  // Per open container, by depth: whether it is an object, the keys it named, its current key or index.
  const isObject: Array<boolean> = []
  const keys: Array<Set<string>> = []
  const current: Array<string | number> = []
  let depth = -1
  let expectKey = false
  for (let i = 0; i < text.length; i++) {
    switch (text.charCodeAt(i)) {
      case QUOTE: {
        const end = endOfString(text, i)
        if (expectKey) {
          const raw = text.slice(i + 1, end)
          const key = raw.includes("\\") ? JSON.parse(text.slice(i, end + 1)) as string : raw
          const seen = keys[depth]!
          if (seen.has(key)) return { key, path: [...current.slice(0, depth), key] }
          seen.add(key)
          current[depth] = key
          expectKey = false
        }
        i = end
        break
      }
      case OPEN_OBJECT:
        depth++
        isObject[depth] = true
        if (keys[depth] === undefined) keys[depth] = new Set()
        else keys[depth]!.clear()
        expectKey = true
        break
      case OPEN_ARRAY:
        depth++
        isObject[depth] = false
        current[depth] = 0
        break
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        depth--
        expectKey = false
        break
      case COMMA:
        if (isObject[depth]) expectKey = true
        else (current[depth] as number)++
        break
    }
  }
  return undefined
}
