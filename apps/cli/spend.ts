import * as Effect from "effect/Effect"
import { adminClient, query } from "./client.js"
import type { Input } from "./commandLine.js"
import type { spendOptions } from "./commands.js"
import { dollars, emit, report, table } from "./output.js"

/** The columns of the dimensions asked for, in their order, then the sums. */
const spendRows = (groupBy: ReadonlyArray<string>, groups: ReadonlyArray<any>) =>
  table(
    [...groupBy.map((dim) => dim.toUpperCase()), "SPENT", "CHARGED", "REFUNDED", "JOBS", "FAILED", "CANCELLED"],
    groups.map((g) => [
      ...groupBy.map((dim) => String(g[dim] ?? "-")),
      dollars(g.spentMicroCents),
      dollars(g.chargedMicroCents),
      dollars(g.refundedMicroCents),
      String(g.jobs),
      String(g.failed),
      String(g.cancelled)
    ])
  )

/** `genjobs spend`: the spend rollups (GET /admin/spend), summed as asked. */
export const spend = ({ options: o }: Input<typeof spendOptions>) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const answer = yield* client.call(
      "GET",
      `/admin/spend${query({ groupBy: o["group-by"], accountId: o.account, from: o.from, to: o.to })}`
    )
    const total = answer.groups.reduce((n: number, g: any) => n + g.spentMicroCents, 0)
    yield* emit(o.json, answer, () =>
      `${spendRows(answer.groupBy, answer.groups)}\n${dollars(total)} spent from ${answer.from} to ${answer.to}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))
