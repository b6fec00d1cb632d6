import { createHash, createHmac } from "node:crypto"
import { createServer, type IncomingMessage, request } from "node:http"
import type { AddressInfo } from "node:net"

/**
 * s3rver accepts any SigV4 signature, so this gate in front of it checks presigned (query
 * string) requests the way S3 does: the canonical request is rebuilt from the request as it
 * arrives, so a changed signed header (Content-Type, Content-Length), path or query, a wrong
 * secret or an expired URL is refused with 403 before s3rver sees it. Written from the SigV4
 * specification, independently of the SDK that signs.
 */
export const startPresignedUrlGate = async (options: {
  readonly upstream: string
  readonly secretAccessKey: string
}) => {
  const upstream = new URL(options.upstream)
  const server = createServer((req, res) => {
    const refusal = presignedRefusal(req, options.secretAccessKey)
    if (refusal !== null) {
      res.writeHead(403, { "content-type": "application/xml" })
      res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${refusal}</Code></Error>`)
      req.resume()
      return
    }
    const forwarded = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      }
    )
    forwarded.on("error", () => res.destroy())
    req.pipe(forwarded)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

// RFC 3986 unreserved characters stay; everything else is percent-encoded, as SigV4 requires.
const encode = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

const hmac = (key: Buffer | string, text: string) => createHmac("sha256", key).update(text).digest()

/** Null when the request carries no query signature or a valid one; otherwise S3's error code. */
const presignedRefusal = (req: IncomingMessage, secret: string): string | null => {
  const url = new URL(req.url ?? "/", "http://gate")
  const query = url.searchParams
  const signature = query.get("X-Amz-Signature")
  if (signature === null) return null
  const amzDate = query.get("X-Amz-Date") ?? ""
  const signedAt = Date.parse(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, "$1-$2-$3T$4:$5:$6Z"))
  if (!(Date.now() <= signedAt + Number(query.get("X-Amz-Expires")) * 1000)) return "AccessDenied"
  const scope = (query.get("X-Amz-Credential") ?? "").split("/").slice(1)
  const signedHeaders = (query.get("X-Amz-SignedHeaders") ?? "").split(";")
  const canonicalQuery = [...query.entries()]
    .filter(([key]) => key !== "X-Amz-Signature")
    .map(([key, value]) => [encode(key), encode(value)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join("&")
  const headerValue = (name: string) => {
    const value = req.headers[name]
    return (Array.isArray(value) ? value.join(",") : value ?? "").trim().replace(/\s+/g, " ")
  }
  const canonicalRequest = [
    req.method,
    url.pathname,
    canonicalQuery,
    signedHeaders.map((name) => `${name}:${headerValue(name)}\n`).join(""),
    signedHeaders.join(";"),
    query.get("X-Amz-Content-Sha256") ?? "UNSIGNED-PAYLOAD"
  ].join("\n")
  const stringToSign = [
    "AWS4-HMAC-SHA256",
    amzDate,
    scope.join("/"),
    createHash("sha256").update(canonicalRequest).digest("hex")
  ].join("\n")
  const key = scope.slice(0, 4).reduce<Buffer | string>((k, part) => hmac(k, part), `AWS4${secret}`)
  return hmac(key, stringToSign).toString("hex") === signature ? null : "SignatureDoesNotMatch"
}
