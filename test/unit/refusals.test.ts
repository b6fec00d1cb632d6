import { Effect, Result, SchemaAST } from "effect"
import { describe, expect, it } from "vitest"
import { JobNotFound } from "../../src/domain/job.js"
import { RateLimitExceeded } from "../../src/domain/rateLimit.js"
import { isRefusal } from "../../src/domain/refusal.js"
import { refusalClasses } from "../../src/http/errorEnvelope.js"

describe("the refusal classes", () => {
  it("give every spec code one class, with its own tag", () => {
    const codes = refusalClasses.map((refusal) => refusal.code)
    expect(new Set(codes).size).toBe(codes.length)
    expect(codes).toHaveLength(32)
    const tags = refusalClasses.map((refusal) => (new (refusal as any)({ message: "m" }) as { _tag: string })._tag)
    expect(new Set(tags).size).toBe(tags.length)
  })

  it("carry their status as the HttpApi annotation an endpoint's addError reads", () => {
    for (const refusal of refusalClasses) {
      expect(SchemaAST.resolve((refusal as unknown as { ast: SchemaAST.AST }).ast)?.httpApiStatus, refusal.code).toBe(refusal.status)
    }
    expect([JobNotFound.code, JobNotFound.status]).toEqual(["JOB_NOT_FOUND", 404])
  })

  it("are matched by their tag, and read as the envelope's code, message, details and Retry-After", async () => {
    const refused = new RateLimitExceeded({ message: "slow down", details: { requestsPerMinute: 2 }, retryAfterSeconds: 40 })
    expect([refused.code, refused.status, refused.message, refused.details, refused.retryAfterSeconds])
      .toEqual(["RATE_LIMIT_EXCEEDED", 429, "slow down", { requestsPerMinute: 2 }, 40])
    expect(isRefusal(refused)).toBe(true)
    expect(isRefusal(new Error("no"))).toBe(false)
    const caught = await Effect.runPromise(
      Effect.result(Effect.fail(new JobNotFound({ message: "No job" })).pipe(Effect.catchTag("JobNotFound", (e) => Effect.succeed(e.code))))
    )
    expect(caught).toEqual(Result.succeed("JOB_NOT_FOUND"))
  })
})
