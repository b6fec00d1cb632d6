/**
 * The client's answer types are written out by hand (so its declarations load no package); these
 * checks fail `npm run typecheck` when one drifts from the server's HttpApi schema.
 */
import type { Schema } from "effect"
import type { AccountOverview, Cancelled, Change, ChangePage, CostEstimate, Job, JobLogPage, JobPage, JobSummary, Model, Models, Submitted, Upload } from "genjobs/client"
import { describe, expectTypeOf, it } from "vitest"
import type { AccountOverviewView } from "../../src/http/schemas/account.js"
import type { ChangePageView, ChangeView } from "../../src/http/schemas/changes.js"
import type { ModelDetail, ModelList } from "../../src/http/schemas/catalog.js"
import type { CancelResponse, CostEstimateView, JobList, JobListItem, JobView, SubmitResponse } from "../../src/http/schemas/jobs.js"
import type { PresignResponse } from "../../src/http/schemas/uploads.js"
import type { JobLogPage as JobLogPageSchema } from "../../src/http/schemas/jobLogs.js"

type Of<S extends Schema.Top> = Schema.Schema.Type<S>

describe("the client's answer types are the server's", () => {
  it("jobs", () => {
    expectTypeOf<Job>().toEqualTypeOf<Of<typeof JobView>>()
    expectTypeOf<JobSummary>().toEqualTypeOf<Of<typeof JobListItem>>()
    expectTypeOf<JobPage>().toEqualTypeOf<Of<typeof JobList>>()
    expectTypeOf<Submitted>().toEqualTypeOf<Of<typeof SubmitResponse>>()
    expectTypeOf<Cancelled>().toEqualTypeOf<Of<typeof CancelResponse>>()
    expectTypeOf<CostEstimate>().toEqualTypeOf<Of<typeof CostEstimateView>>()
    expectTypeOf<JobLogPage>().toEqualTypeOf<Of<typeof JobLogPageSchema>>()
  })

  it("the changes feed", () => {
    expectTypeOf<Change>().toEqualTypeOf<Of<typeof ChangeView>>()
    expectTypeOf<ChangePage>().toEqualTypeOf<Of<typeof ChangePageView>>()
  })

  it("models, account and uploads", () => {
    expectTypeOf<Models>().toEqualTypeOf<Of<typeof ModelList>>()
    expectTypeOf<Model>().toEqualTypeOf<Of<typeof ModelDetail>>()
    expectTypeOf<AccountOverview>().toEqualTypeOf<Of<typeof AccountOverviewView>>()
    expectTypeOf<Upload>().toEqualTypeOf<Of<typeof PresignResponse>["data"]>()
  })
})
