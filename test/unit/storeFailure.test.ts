import { describe, expect, it } from "vitest"
import { databaseOf, reasonOf } from "../../apps/server/storeFailure.js"

describe("a store's failure to open, in one line", () => {
  it("gives PostgreSQL's message with its SQLSTATE, and a socket's message as it is", () => {
    const auth = Object.assign(new Error(`password authentication failed for user "app"`), { code: "28P01" })
    expect(reasonOf(auth)).toBe(`password authentication failed for user "app" (28P01)`)
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })
    expect(reasonOf(refused)).toBe("connect ECONNREFUSED 127.0.0.1:5432")
  })

  it("gives each error of an AggregateError once (a host name with IPv4 and IPv6 addresses), and a code where the message is empty", () => {
    const v4 = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })
    const v6 = Object.assign(new Error("connect ECONNREFUSED ::1:5432"), { code: "ECONNREFUSED" })
    expect(reasonOf(new AggregateError([v4, v6, v4], ""))).toBe("connect ECONNREFUSED 127.0.0.1:5432; connect ECONNREFUSED ::1:5432")
    expect(reasonOf(Object.assign(new Error(""), { code: "ETIMEDOUT" }))).toBe("ETIMEDOUT")
  })

  it("names the database without its password", () => {
    expect(databaseOf("postgres://app:s3cret@db.internal:5432/jobs?sslmode=require")).toBe("postgres://app@db.internal:5432/jobs?sslmode=require")
    expect(databaseOf("not a url s3cret")).toBe("DATABASE_URL")
  })
})
