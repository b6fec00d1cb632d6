import type { Engine } from "genjobs"
import { afterAll, beforeAll, describe } from "vitest"
import { clientSuite, type Target } from "./suite.js"
import { webHandlerTarget } from "./webHandlerTarget.js"

let engine: Engine
let target: Target
beforeAll(async () => {
  ({ engine, target } = await webHandlerTarget(1))
})
afterAll(() => engine.dispose())

describe("the client against the engine's web handler", () => {
  clientSuite(() => target)
})
