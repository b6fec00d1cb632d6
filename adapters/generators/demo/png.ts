import { crc32, deflateSync } from "node:zlib"

/** An RGBA image: `pixels` holds width * height * 4 bytes, row by row. */
export interface Rgba {
  readonly width: number
  readonly height: number
  readonly pixels: Uint8Array
}

const SIGNATURE = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])

const chunk = (type: string, data: Uint8Array): Buffer => {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, "ascii"), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([length, body, crc])
}

const u32 = (...values: Array<number>) => {
  const out = Buffer.alloc(values.length * 4)
  values.forEach((v, i) => out.writeUInt32BE(v, i * 4))
  return out
}

const header = (width: number, height: number) =>
  chunk("IHDR", Buffer.concat([u32(width, height), Buffer.from([8, 6, 0, 0, 0])]))

/** Scanlines with filter type 0, deflated: the image data of one frame. */
const compressed = (image: Rgba): Buffer => {
  const stride = image.width * 4
  const raw = Buffer.alloc(image.height * (stride + 1))
  for (let y = 0; y < image.height; y++) {
    raw[y * (stride + 1)] = 0
    raw.set(image.pixels.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1)
  }
  return deflateSync(raw)
}

export const encodePng = (image: Rgba): Uint8Array =>
  Buffer.concat([SIGNATURE, header(image.width, image.height), chunk("IDAT", compressed(image)), chunk("IEND", new Uint8Array())])

/** Animated PNG: every frame full size; the first frame is also the still image. */
export const encodeApng = (frames: ReadonlyArray<Rgba>, frameDelayMs: number): Uint8Array => {
  const first = frames[0]!
  const parts: Array<Buffer> = [SIGNATURE, header(first.width, first.height), chunk("acTL", u32(frames.length, 0))]
  let sequence = 0
  const frameControl = () => {
    const data = Buffer.alloc(26)
    data.writeUInt32BE(sequence++, 0)
    data.writeUInt32BE(first.width, 4)
    data.writeUInt32BE(first.height, 8)
    data.writeUInt32BE(0, 12)
    data.writeUInt32BE(0, 16)
    data.writeUInt16BE(frameDelayMs, 20)
    data.writeUInt16BE(1000, 22)
    data[24] = 0
    data[25] = 0
    return chunk("fcTL", data)
  }
  frames.forEach((frame, i) => {
    parts.push(frameControl())
    if (i === 0) {
      parts.push(chunk("IDAT", compressed(frame)))
    } else {
      parts.push(chunk("fdAT", Buffer.concat([u32(sequence++), compressed(frame)])))
    }
  })
  parts.push(chunk("IEND", new Uint8Array()))
  return Buffer.concat(parts)
}
