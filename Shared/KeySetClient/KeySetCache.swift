import AsyncHTTPClient
import Foundation
import Identity
import Logging
import NIOCore
import NIOFoundationCompat
import Synchronization

/// auth's verification keys, fetched from its JWKS document and kept in memory.
///
/// A token signed with a key id the cache does not know makes it fetch the document again — at
/// most once every `refreshInterval`, however many such tokens arrive (a forged `kid` cannot make
/// a service hammer auth), and concurrent callers share one fetch. Keys also expire after
/// `maxAge`, so a key auth has retired stops verifying.
package final class KeySetCache: Sendable {
    private struct State {
        var verifier: AccessTokenVerifier?
        var fetchedAt: ContinuousClock.Instant?
        var attemptedAt: ContinuousClock.Instant?
        var inFlight: Task<AccessTokenVerifier?, Never>?
    }

    private let url: URL
    private let issuer: String
    private let refreshInterval: Duration
    private let maxAge: Duration
    private let client: HTTPClient
    private let logger: Logger
    private let state = Mutex(State())

    package init(url: URL, issuer: String, refreshInterval: Duration, maxAge: Duration = .seconds(3_600), client: HTTPClient, logger: Logger) {
        self.url = url
        self.issuer = issuer
        self.refreshInterval = refreshInterval
        self.maxAge = maxAge
        self.client = client
        self.logger = logger
    }

    /// The claims of `token` when auth signed it and it is current.
    /// - Throws: `AccessTokenError`; `.unknownKey` also when auth's keys cannot be fetched.
    package func verify(_ token: String) async throws(AccessTokenError) -> AccessTokenClaims {
        let (cached, stale) = state.withLock { state in
            (state.verifier, state.fetchedAt.map { ContinuousClock.now - $0 > maxAge } ?? true)
        }
        if let cached, !stale {
            do {
                return try cached.verify(token)
            } catch .unknownKey {
                // Maybe auth rotated its key: fetch again below.
            }
        }
        guard let fresh = await refreshed() ?? cached else { throw .unknownKey(nil) }
        return try fresh.verify(token)
    }

    /// The claims of `token` when the keys at hand verify it; `nil` when they do not or when
    /// verifying would take a fetch (no keys yet, keys past their age, an unknown key id).
    package func verifyWithoutFetching(_ token: String) -> AccessTokenClaims? {
        let cached: AccessTokenVerifier? = state.withLock { state in
            guard let fetchedAt = state.fetchedAt, ContinuousClock.now - fetchedAt <= maxAge else { return nil }
            return state.verifier
        }
        return try? cached?.verify(token)
    }

    /// The verifier after a fetch, or `nil` when the last attempt was too recent or the fetch
    /// failed.
    private func refreshed() async -> AccessTokenVerifier? {
        let task: Task<AccessTokenVerifier?, Never>? = state.withLock { state in
            if let inFlight = state.inFlight { return inFlight }
            if let attempted = state.attemptedAt, ContinuousClock.now - attempted < refreshInterval { return nil }
            state.attemptedAt = .now
            let task = Task { await self.fetch() }
            state.inFlight = task
            return task
        }
        return await task?.value
    }

    private func fetch() async -> AccessTokenVerifier? {
        defer { state.withLock { $0.inFlight = nil } }
        do {
            let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(5))
            guard response.status == .ok else {
                logger.warning("auth's key set could not be fetched", metadata: ["url": "\(url)", "status": "\(response.status.code)"])
                return nil
            }
            let body = try await response.body.collect(upTo: 1 << 20)
            let keySet = try JSONDecoder().decode(JSONWebKeySet.self, from: Data(buffer: body))
            let verifier = AccessTokenVerifier(keys: keySet.verificationKeys, issuer: issuer)
            state.withLock { state in
                state.verifier = verifier
                state.fetchedAt = .now
            }
            logger.info("Fetched auth's key set", metadata: ["keys": "\(keySet.verificationKeys.map(\.id))"])
            return verifier
        } catch {
            logger.warning("auth's key set could not be fetched", metadata: ["url": "\(url)", "error": "\(error)"])
            return nil
        }
    }
}
