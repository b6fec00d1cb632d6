import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** The connections a CountingServer was opened, and the most open at once. */
export interface Connections {
  opened: number
  open: number
  mostOpen: number
  requests: number
}

export interface CountingServer {
  readonly url: string
  readonly seen: Connections
  readonly close: () => Promise<void>
}

/**
 * A loopback HTTP server that keeps connections alive for 10 s and counts them: what the
 * bounded provider pools are checked against. `handle` answers each request.
 */
export const startCountingServer = async (handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<CountingServer> => {
  const seen: Connections = { opened: 0, open: 0, mostOpen: 0, requests: 0 }
  const server = createServer((req, res) => {
    seen.requests++
    handle(req, res)
  })
  server.keepAliveTimeout = 10_000
  server.on("connection", (socket) => {
    seen.opened++
    seen.mostOpen = Math.max(seen.mostOpen, ++seen.open)
    socket.on("close", () => seen.open--)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
