import { type ChangeEntry, encodeChangeCursor } from "../domain/change.js"
import type { ChangeView } from "./schemas/changes.js"
import { iso } from "./views.js"

/** An entry of the changes feed as the API answers it (the page's items and the stream's events alike). */
export const changeView = (entry: ChangeEntry): typeof ChangeView.Type => ({
  cursor: encodeChangeCursor(entry.position),
  jobId: entry.jobId,
  requestId: entry.requestId,
  status: entry.status,
  model: entry.model,
  version: entry.version,
  completedAt: iso(entry.endedAt),
  costMicroCents: entry.costMicroCents,
  refundedMicroCents: entry.refundedMicroCents,
  ...(entry.error === null ? {} : { error: entry.error })
})
