import { spawn } from "node:child_process"

/**
 * Whether `command --version` runs (a broker binary the tests start privately). Under CI its
 * absence is an error, as a missing server is: the suites must not pass by skipping.
 */
export const binaryOnPath = async (command: string): Promise<boolean> => {
  const found = await new Promise<boolean>((resolve) => {
    const child = spawn(command, ["--version"], { stdio: "ignore" })
    child.on("error", () => resolve(false))
    child.on("exit", (code) => resolve(code === 0))
  })
  if (!found && process.env["CI"]) throw new Error(`${command} is required in CI (not found on PATH)`)
  return found
}
