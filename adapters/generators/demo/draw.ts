import { createHash } from "node:crypto"
import type { Rgba } from "./png.js"

/** Bytes derived from the prompt: the same prompt always draws the same picture. */
export const seedOf = (prompt: string): Uint8Array => createHash("sha256").update(prompt).digest()

interface Circle {
  readonly x: number
  readonly y: number
  readonly r: number
  readonly color: readonly [number, number, number]
}

const shapesOf = (seed: Uint8Array, width: number, height: number): Array<Circle> =>
  [0, 1, 2].map((i) => ({
    x: (seed[6 + i * 5]! / 255) * width,
    y: (seed[7 + i * 5]! / 255) * height,
    r: (0.1 + (seed[8 + i * 5]! / 255) * 0.25) * Math.min(width, height),
    color: [seed[9 + i * 5]!, seed[10 + i * 5]!, seed[(11 + i * 5) % 32]!] as const
  }))

/** A gradient between two prompt colours with three prompt-placed circles; `shift` moves them (animation). */
export const drawScene = (seed: Uint8Array, width: number, height: number, shift = 0): Rgba => {
  const pixels = new Uint8Array(width * height * 4)
  const from = [seed[0]!, seed[1]!, seed[2]!]
  const to = [seed[3]!, seed[4]!, seed[5]!]
  const shapes = shapesOf(seed, width, height).map((c, i) => ({
    ...c,
    x: (c.x + shift * width * (i + 1) * 0.1) % width
  }))
  for (let y = 0; y < height; y++) {
    const t = height <= 1 ? 0 : y / (height - 1)
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 4
      let rgb = from.map((f, k) => Math.round(f + (to[k]! - f) * t))
      for (const c of shapes) {
        if ((x - c.x) ** 2 + (y - c.y) ** 2 <= c.r ** 2) rgb = [...c.color]
      }
      pixels.set([rgb[0]!, rgb[1]!, rgb[2]!, 255], at)
    }
  }
  return { width, height, pixels }
}

/** A few tones chosen by the prompt, one after another, with short fades against clicks. */
export const synthTones = (seed: Uint8Array, seconds: number, sampleRate: number): Float32Array => {
  const samples = new Float32Array(Math.max(1, Math.round(seconds * sampleRate)))
  const notes = [0, 1, 2, 3].map((i) => 220 * 2 ** ((seed[i]! % 24) / 12))
  const perNote = samples.length / notes.length
  const fade = Math.min(200, perNote / 4)
  for (let i = 0; i < samples.length; i++) {
    const note = Math.min(notes.length - 1, Math.floor(i / perNote))
    const within = i - note * perNote
    const envelope = Math.min(1, within / fade, (perNote - within) / fade)
    samples[i] = 0.4 * envelope * Math.sin((2 * Math.PI * notes[note]! * i) / sampleRate)
  }
  return samples
}
