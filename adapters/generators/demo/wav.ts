/** 16-bit PCM mono WAV from samples in [-1, 1]. */
export const encodeWav = (samples: Float32Array, sampleRate: number): Uint8Array => {
  const dataBytes = samples.length * 2
  const out = Buffer.alloc(44 + dataBytes)
  out.write("RIFF", 0, "ascii")
  out.writeUInt32LE(36 + dataBytes, 4)
  out.write("WAVE", 8, "ascii")
  out.write("fmt ", 12, "ascii")
  out.writeUInt32LE(16, 16)
  out.writeUInt16LE(1, 20)
  out.writeUInt16LE(1, 22)
  out.writeUInt32LE(sampleRate, 24)
  out.writeUInt32LE(sampleRate * 2, 28)
  out.writeUInt16LE(2, 32)
  out.writeUInt16LE(16, 34)
  out.write("data", 36, "ascii")
  out.writeUInt32LE(dataBytes, 40)
  samples.forEach((s, i) => out.writeInt16LE(Math.round(Math.max(-1, Math.min(1, s)) * 32767), 44 + i * 2))
  return out
}
