import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import S3rver from "s3rver"
import { startPresignedUrlGate } from "./presignedUrlGate.js"

/**
 * A real S3-compatible server on 127.0.0.1 (s3rver) behind a gate that checks presigned URLs'
 * signatures as S3 does, with one empty bucket per call.
 */
/** A client of the local S3 server (S3rver's fixed credentials) at `endpoint`. */
export const s3ClientAt = (endpoint: string) =>
  new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    requestChecksumCalculation: "WHEN_REQUIRED",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }
  })

export const startS3 = async () => {
  const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: mkdtempSync(join(tmpdir(), "genjobs-s3-")) })
  const { port } = await server.run()
  const gate = await startPresignedUrlGate({ upstream: `http://127.0.0.1:${port}`, secretAccessKey: "S3RVER" })
  const endpoint = gate.endpoint
  const client = s3ClientAt(endpoint)
  let n = 0
  return {
    endpoint,
    client,
    bucket: async () => {
      const name = `genjobs-${++n}`
      await client.send(new CreateBucketCommand({ Bucket: name }))
      return { client, bucket: name, publicBaseUrl: `${endpoint}/${name}` }
    },
    close: async () => {
      await gate.close()
      await server.close()
    }
  }
}
