import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Hash } from "effect"
import { HttpServerResponse } from "effect/http"
import { Writable } from "node:stream"
import { FollowerStream, makeHeartbeats } from "../../src/http/jobStream.js"

/** A stream body as the status and changes streams are. */
class Body extends FollowerStream {}

describe("an open stream's response, when its client leaves", () => {
  it.effect("is folded into the request's failure without walking what its body is piped into", () =>
    Effect.gen(function*() {
      const body = new Body(yield* makeHeartbeats(Duration.hours(1)))
      body.attach(() => undefined)
      // The server's side of the pipe, as node:http's response: its socket leads to the server and
      // every other connection. This one counts each time a hash reaches it.
      let reached = 0
      const connections = { [Hash.symbol]: () => (reached++, 0) }
      const response = Object.assign(new Writable({ write: (_chunk, _encoding, done) => done() }), { connections })
      body.pipe(response)
      // What the HTTP server does with a response whose client left after its headers went out.
      const cause = Cause.combine(Cause.interrupt(), Cause.die(HttpServerResponse.raw(body, { contentType: "text/event-stream" })))
      expect(cause.reasons.length).toBe(2)
      // Walked, the body led through its pipe to every open connection: 10,000 clients leaving
      // together took half a minute of the server's CPU (docs/benchmarks.md).
      expect(reached).toBe(0)
      body.destroy()
    }))
})
