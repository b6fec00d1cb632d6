import { describe, expect, it } from "vitest"
import { afterAdmit, afterFailure, afterSuccess, closedCircuit, isAvailable } from "../../src/domain/circuit.js"
import { pickCredential } from "../../src/domain/credentialPick.js"

const settings = { failures: 3, pauseMs: 1_000 }

describe("circuit", () => {
  it("opens on the configured number of failures in a row; a success in between starts the count again", () => {
    let c = afterFailure(afterFailure(closedCircuit, 0, settings), 1, settings)
    expect(c).toEqual({ state: "closed", failures: 2 })
    c = afterFailure(afterSuccess(c), 2, settings)
    expect(c).toEqual({ state: "closed", failures: 1 })
    c = afterFailure(afterFailure(c, 3, settings), 4, settings)
    expect(c).toEqual({ state: "open", failures: 3, openedAt: 4 })
    expect(isAvailable(c, 1_003, settings)).toBe(false)
  })

  it("lets one probe through after the pause: its success closes the circuit, its failure opens it again", () => {
    const open = { state: "open", failures: 3, openedAt: 0 } as const
    expect(isAvailable(open, 1_000, settings)).toBe(true)
    const probing = afterAdmit(open, 1_000)
    expect(probing).toEqual({ state: "half_open", failures: 3, openedAt: 0, probeAt: 1_000 })
    expect(isAvailable(probing, 1_500, settings)).toBe(false)
    expect(afterSuccess(probing)).toEqual(closedCircuit)
    expect(afterFailure(probing, 1_200, settings)).toEqual({ state: "open", failures: 4, openedAt: 1_200 })
  })

  it("a probe that never reports back frees the circuit for another after a further pause", () => {
    const probing = afterAdmit({ state: "open", failures: 3, openedAt: 0 }, 1_000)
    expect(isAvailable(probing, 1_999, settings)).toBe(false)
    expect(isAvailable(probing, 2_000, settings)).toBe(true)
  })

  it("admitting through a closed circuit changes nothing", () => {
    expect(afterAdmit(closedCircuit, 5)).toBe(closedCircuit)
  })
})

describe("pickCredential", () => {
  it("takes the least in flight for its weight, the first listed on a tie", () => {
    expect(pickCredential([])).toBeUndefined()
    expect(pickCredential([{ id: "a", weight: 1, inFlight: 0 }, { id: "b", weight: 1, inFlight: 0 }])?.id).toBe("a")
    expect(pickCredential([{ id: "a", weight: 1, inFlight: 1 }, { id: "b", weight: 1, inFlight: 0 }])?.id).toBe("b")
    // Weight 3 takes three starts for each one of weight 1.
    expect(pickCredential([{ id: "a", weight: 3, inFlight: 2 }, { id: "b", weight: 1, inFlight: 0 }])?.id).toBe("a")
    expect(pickCredential([{ id: "a", weight: 3, inFlight: 3 }, { id: "b", weight: 1, inFlight: 0 }])?.id).toBe("b")
  })

  it("spreads starts by weight when none ends", () => {
    const loads = [{ id: "a", weight: 2, inFlight: 0 }, { id: "b", weight: 1, inFlight: 0 }]
    for (let i = 0; i < 30; i++) {
      const picked = pickCredential(loads)!
      loads[loads.indexOf(picked)] = { ...picked, inFlight: picked.inFlight + 1 }
    }
    expect(loads.map((l) => l.inFlight)).toEqual([20, 10])
  })
})
