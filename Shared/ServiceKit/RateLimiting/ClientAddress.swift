import Foundation
import NIOCore

/// An IPv4 or IPv6 address range in CIDR form (`10.0.0.0/8`, `::1/128`, or one address).
package struct IPRange: Sendable, Equatable {
    private let network: [UInt8]
    private let prefixLength: Int

    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let address = IPRange.bytes(of: parts[0]) else { return nil }
        let bits = address.count * 8
        let prefix = parts.count == 2 ? Int(parts[1]) : bits
        guard let prefix, (0...bits).contains(prefix) else { return nil }
        self.network = address
        self.prefixLength = prefix
    }

    package func contains(_ text: String) -> Bool {
        guard let address = IPRange.bytes(of: text), address.count == network.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(address, network) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a & mask != b & mask { return false }
            remaining -= 8
        }
        return true
    }

    /// The address's bytes (4 or 16), or `nil` when it is not an IP address.
    package static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}

/// Who is asking: the peer address, or, when the peer is one of our proxies (the gateway), the
/// address it reports in `X-Forwarded-For`.
///
/// The chain is read from the right: each proxy appends the address it saw, so the first entry
/// that is not a trusted proxy is the client. Everything left of it could have been written by the
/// client itself and is ignored. From an untrusted peer the header is ignored altogether.
package struct ClientAddressResolver: Sendable {
    package let trustedProxies: [IPRange]

    package init(trustedProxies: [IPRange]) {
        self.trustedProxies = trustedProxies
    }

    package func resolve(peer: SocketAddress?, forwardedFor: String?) -> String {
        resolve(peerIP: Self.text(of: peer), forwardedFor: forwardedFor)
    }

    /// As `resolve(peer:forwardedFor:)`, for a peer address already made text by `text(of:)`: a
    /// caller serving many requests over one connection makes it once.
    package func resolve(peerIP: String, forwardedFor: String?) -> String {
        guard isTrusted(peerIP), let forwardedFor else { return peerIP }
        let chain = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for entry in chain.reversed() {
            guard IPRange.bytes(of: entry) != nil else { return peerIP }
            if !isTrusted(entry) { return entry }
        }
        return chain.first ?? peerIP
    }

    /// A peer's address as text; `unknown` (never trusted) for one without an IP address.
    package static func text(of peer: SocketAddress?) -> String {
        peer?.ipAddress ?? "unknown"
    }

    package func isTrusted(_ address: String) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }
}

extension ConfigurationReader {
    /// A comma-separated list of IP addresses and CIDR ranges; empty when unset.
    package func ipRanges(_ name: String) throws(ConfigurationError) -> [IPRange] {
        try value(
            name,
            expected: "a comma-separated list of IP addresses or CIDR ranges",
            default: [],
            parse: { raw in
                let ranges = raw.split(separator: ",").map { IPRange($0.trimmingCharacters(in: .whitespaces)) }
                return ranges.contains(nil) ? nil : ranges.compactMap { $0 }
            }
        )
    }
}
