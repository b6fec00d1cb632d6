import { lookup } from "node:dns/promises"
import type { LookupFunction } from "node:net"
import { AddressRefused, isForbiddenAddress } from "../../src/domain/publicAddress.js"

/**
 * A socket's `lookup` that resolves every A and AAAA record, refuses the name when any of them
 * is not public (`isForbiddenAddress`), and hands the socket the address it checked: the
 * connection goes where the check looked, with no second lookup a rebinding DNS server could
 * answer differently, while TLS's SNI and the Host header keep the name. Shared by the webhook
 * sender and the output downloads. `allowPrivate` lifts the refusal (development, simulators).
 */
export const checkedLookup = (allowPrivate: boolean): LookupFunction => (hostname, options, callback) => {
  lookup(hostname, { all: true, verbatim: true })
    .then((addresses) => {
      if (addresses.length === 0) throw new Error(`${hostname} has no address`)
      const refused = addresses.find((a) => isForbiddenAddress(a.address))
      if (refused !== undefined && !allowPrivate) {
        throw new AddressRefused({ message: `refused: ${hostname} resolves to the non-public address ${refused.address}` })
      }
      const chosen = addresses[0]!
      if (options.all === true) callback(null, [{ address: chosen.address, family: chosen.family }])
      else callback(null, chosen.address, chosen.family)
    })
    .catch((error: Error) => callback(Object.assign(error, { code: "EREFUSED" }), "", 0))
}
