/**
 * The submit endpoint of the bare servers on the engine's framework (httpApiPg.ts,
 * httpApiPgSameWork.ts): an Effect HttpApi of one endpoint, POST /v1/jobs/submit, its payload
 * Schema-decoded as the engine's, the key's header read, a 201 answer encoded by `success`.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"

const Submit = Schema.Struct({
  model: Schema.String,
  version: Schema.optionalKey(Schema.String),
  input: Schema.Record(Schema.String, Schema.Unknown),
  webhookUrl: Schema.optionalKey(Schema.String)
})

export const submitApi = <S extends Schema.Top>(success: S) =>
  HttpApi.make("floor").add(
    HttpApiGroup.make("jobs").add(
      HttpApiEndpoint.post("submit", "/v1/jobs/submit", {
        payload: Submit,
        success: success.pipe(HttpApiSchema.status(201)),
        headers: Schema.Struct({ authorization: Schema.optionalKey(Schema.String) })
      })
    )
  )
