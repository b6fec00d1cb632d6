/**
 * The headers of an answer served by a version that is going away: `Deprecation` as RFC 9745
 * has it (a Structured Field date, `@<epoch seconds>`; the draft's `true` is not in the RFC)
 * and `Sunset` as RFC 8594 has it (an HTTP-date). The catalog records when a version goes away,
 * not since when it is deprecated, so `Deprecation` carries the answer's own time: deprecated
 * as of now, never later than the sunset.
 */
export const deprecationHeaders = (
  version: { readonly deprecated: boolean; readonly sunsetAt: string | undefined },
  now: number
): Record<string, string> => {
  if (!version.deprecated && version.sunsetAt === undefined) return {}
  const deprecation = { deprecation: `@${Math.floor(now / 1000)}` }
  // toUTCString gives the IMF-fixdate form of an HTTP-date: "Wed, 31 Mar 2027 00:00:00 GMT".
  return version.sunsetAt === undefined ? deprecation : { ...deprecation, sunset: new Date(version.sunsetAt).toUTCString() }
}
