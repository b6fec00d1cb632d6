/** The provider simulators, by provider id: tests and the dev server start them from here. */
export { type OpenAISimulator, type OpenAISimulatorOptions, startOpenAISimulator } from "./openai.js"
export { type RunwaySimulator, type RunwaySimulatorOptions, startRunwaySimulator } from "./runway.js"
import { startOpenAISimulator } from "./openai.js"
import { startRunwaySimulator } from "./runway.js"

export const simulators = {
  openai: startOpenAISimulator,
  runway: startRunwaySimulator
} as const
