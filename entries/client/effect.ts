/**
 * genjobs/client/effect: the engine's API for Effect programs, `HttpApiClient.make` over the
 * same HttpApi definition the server is built from. Needs effect and @effect/platform (3.x);
 * the Promise client, `genjobs/client`, needs neither. See docs/client.md#the-effect-client.
 */
export { type EffectClient, makeEffectClient } from "../../src/client/effectClient.js"
export { EngineApi } from "../../src/http/Api.js"
