import { describe, expect, it } from "vitest"
import { AuditAction } from "../../src/domain/audit.js"

// The dashboard's modules are plain browser JavaScript, outside the compiler's view.
const ui = "../../src/dashboard/ui/auditActions.js"
const { AUDIT_ACTIONS } = (await import(ui)) as { readonly AUDIT_ACTIONS: ReadonlyArray<string> }

describe("the dashboard's audit filter", () => {
  it("offers exactly the audit log's actions", () => {
    expect([...AUDIT_ACTIONS].sort()).toEqual([...AuditAction.literals].sort())
  })
})
