/**
 * s3rver behind its gate (see s3.ts) in a process of its own, for a test that measures its own
 * process's memory and must not count the server's. Prints the endpoint and a bucket as one JSON
 * line; stops when its stdin closes, so it cannot outlive the test that started it.
 */
import { startS3 } from "./s3.js"

const s3 = await startS3()
const { bucket } = await s3.bucket()
process.stdout.write(`${JSON.stringify({ endpoint: s3.endpoint, bucket })}\n`)
process.stdin.resume()
process.stdin.on("end", () => void s3.close().then(() => process.exit(0)))
