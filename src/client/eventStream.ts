/** One server-sent event (text/event-stream, as the HTML standard parses it). */
export interface ServerEvent {
  readonly id: string | undefined
  readonly event: string
  readonly data: string
}

/** The events of a stream, in order; stopping early cancels the stream. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  let id: string | undefined
  let event = ""
  let data: Array<string> = []
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      const lines = buffer.split(/\r\n|\r|\n/)
      // The last piece may be a line still arriving.
      buffer = lines.pop()!
      for (const line of lines) {
        if (line === "") {
          if (data.length > 0) yield { id, event: event || "message", data: data.join("\n") }
          event = ""
          data = []
          continue
        }
        if (line.startsWith(":")) continue
        const colon = line.indexOf(":")
        const field = colon === -1 ? line : line.slice(0, colon)
        const text = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
        if (field === "data") data.push(text)
        else if (field === "event") event = text
        else if (field === "id" && !text.includes("\u0000")) id = text
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}
