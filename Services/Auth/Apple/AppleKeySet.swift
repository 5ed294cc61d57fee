import AsyncHTTPClient
import Foundation
import Identity
import Logging
import NIOCore
import Synchronization
import _CryptoExtras

/// Apple's signing keys, fetched from `AUTH_APPLE_JWKS_URL` and kept by `kid`. A token naming a key
/// not held yet sends for the set again (Apple rotates its keys), at most once a second, so a flood
/// of forged `kid`s cannot make auth hammer Apple.
final class AppleKeySet: Sendable {
    let url: URL
    let client: HTTPClient
    var refetchInterval: Duration { .seconds(1) }
    let logger: Logger
    private let state = Mutex<(keys: [String: _RSA.Signing.PublicKey], fetchedAt: ContinuousClock.Instant?)>(([:], nil))

    init(url: URL, client: HTTPClient, logger: Logger) {
        self.url = url
        self.client = client
        self.logger = logger
    }

    /// The key `keyID` names.
    /// - Throws: `AuthError.badIDToken` when Apple's set does not hold it (or cannot be read).
    func key(_ keyID: String) async throws -> _RSA.Signing.PublicKey {
        let (held, mayFetch) = state.withLock { state in
            (state.keys[keyID], state.fetchedAt.map { $0.duration(to: .now) >= refetchInterval } ?? true)
        }
        if let held { return held }
        guard mayFetch else { throw AuthError.badIDToken("the token's key is not one of Apple's") }
        let keys = try await fetch()
        guard let key = keys[keyID] else { throw AuthError.badIDToken("the token's key is not one of Apple's") }
        return key
    }

    private func fetch() async throws -> [String: _RSA.Signing.PublicKey] {
        state.withLock { $0.fetchedAt = .now }
        let keys: [String: _RSA.Signing.PublicKey]
        do {
            let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(10))
            guard response.status == .ok else { throw AppleKeySetError(status: Int(response.status.code)) }
            let body = try await response.body.collect(upTo: 1 << 20)
            keys = try Self.parse(Data(buffer: body))
        } catch {
            logger.warning("Apple's key set could not be read", metadata: ["error": "\(error)"])
            throw AuthError.badIDToken("Apple's keys could not be read")
        }
        state.withLock { $0.keys = keys }
        return keys
    }

    /// The RSA signing keys of a JWKS document, by `kid`; others are passed over.
    static func parse(_ document: Data) throws -> [String: _RSA.Signing.PublicKey] {
        struct Set: Decodable {
            struct Key: Decodable {
                var kty: String
                var kid: String?
                var use: String?
                var n: String?
                var e: String?
            }
            var keys: [Key]
        }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for key in try JSONDecoder().decode(Set.self, from: document).keys where key.kty == "RSA" && key.use != "enc" {
            guard let id = key.kid, let n = key.n.flatMap(Base64URL.decode), let e = key.e.flatMap(Base64URL.decode),
                let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { continue }
            keys[id] = publicKey
        }
        return keys
    }
}

struct AppleKeySetError: Error, CustomStringConvertible {
    var status: Int
    var description: String { "Apple's key set answered \(status)" }
}
