import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { ChangeEntry, ChangePosition } from "../domain/change.js"
import type { Caller } from "../services/Auth.js"
import type { ChangeListener, Changes } from "../services/Changes.js"
import { changeView } from "./changeViews.js"
import { FollowerStream, type Heartbeats, OPEN_BYTES, STREAM_HEADERS } from "./jobStream.js"

const encoder = new TextEncoder()

/** Each entry read is one object handed to all its account's streams: encoded once for them all. */
const encodedEvents = new WeakMap<ChangeEntry, Uint8Array>()

/** An entry's event: its cursor as the event id, so Last-Event-ID resumes after it. */
const eventOf = (entry: ChangeEntry): Uint8Array => {
  let bytes = encodedEvents.get(entry)
  if (bytes === undefined) {
    const view = changeView(entry)
    bytes = encoder.encode(`id: ${view.cursor}\ndata: ${JSON.stringify(view)}\n\n`)
    encodedEvents.set(entry, bytes)
  }
  return bytes
}

/**
 * The body of one open changes stream, and its follower: the process's one change reader
 * (services/Changes.ts) and the heartbeat timer push its bytes. No fiber, queue or scope of its
 * own, as the job's status stream (jobStream.ts). It leaves the reader when the body is
 * destroyed (the client left); a store error ends it, and the client resumes with Last-Event-ID.
 */
class ChangeStream extends FollowerStream implements ChangeListener {
  onEntries(entries: ReadonlyArray<ChangeEntry>) {
    for (const entry of entries) this.push(eventOf(entry))
  }
}

/**
 * The text/event-stream answer following the caller's account from `after` (undefined: from
 * now on): its opening comment at once, then an event per ending. The follower joins before the
 * answer starts, so a refusal (scope, too many streams) is the usual JSON error.
 */
export const changeStreamResponse = (
  changes: Changes["Service"],
  heartbeats: Heartbeats,
  caller: Caller,
  after: ChangePosition | undefined
) =>
  Effect.suspend(() => {
    const stream = new ChangeStream(heartbeats)
    stream.push(OPEN_BYTES)
    return Effect.map(changes.follow(caller, after, stream), (leave) => {
      stream.attach(leave)
      return HttpServerResponse.raw(stream, { contentType: "text/event-stream", headers: STREAM_HEADERS })
    })
  })
