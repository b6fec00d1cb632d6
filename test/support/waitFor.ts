/** Polls `check` every 20 ms until it holds or `ms` pass; answers whether it held. */
export const waitFor = async (check: () => Promise<boolean> | boolean, ms = 10_000) => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return false
}
