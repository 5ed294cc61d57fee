import AsyncHTTPClient
import Foundation
import Identity
import Logging
import NIOCore
import NIOFoundationCompat
import ServiceLifecycle
import Synchronization

/// auth's verification keys, fetched from its JWKS document and kept in memory.
///
/// Run as a service, it fetches them as soon as it starts (retrying with a growing pause while auth
/// cannot be reached) and again when they are half their `maxAge` old, so a request rarely waits
/// for a fetch. A token signed with a key id the cache does not know makes it fetch the document
/// again — at most once every `refreshInterval`, however many such tokens arrive (a forged `kid`
/// cannot make a service hammer auth), and concurrent callers share one fetch. Keys past `maxAge`
/// are replaced by the next successful fetch, so a key auth has retired stops verifying; while
/// auth cannot be reached, the last keys fetched keep verifying.
package final class KeySetCache: Service, Sendable {
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

    /// Keeps the keys fresh until graceful shutdown: a fetch at once, another when they are half
    /// `maxAge` old; after a failure, again in 250 ms, doubling up to 30 s.
    package func run() async {
        let (firstRetry, longestRetry, refreshAfter) = (Duration.milliseconds(250), Duration.seconds(30), maxAge / 2)
        await cancelWhenGracefulShutdown { [self] in
            var retry = firstRetry
            while !Task.isCancelled {
                if await refreshed(evenIfRecentlyTried: true) != nil {
                    retry = firstRetry
                    try? await Task.sleep(for: refreshAfter)
                } else {
                    try? await Task.sleep(for: retry)
                    retry = min(retry * 2, longestRetry)
                }
            }
        }
    }

    /// The claims of `token` when auth signed it and it is current.
    /// - Throws: `AccessTokenError`; `.keysUnavailable` for a well-formed ES256 token when no keys
    ///   were ever fetched and a fetch now fails.
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
        guard let fresh = await refreshed() ?? cached else {
            // Without keys, only what is wrong with the token itself can be told.
            do {
                _ = try AccessTokenVerifier(keys: [], issuer: issuer).verify(token)
            } catch .unknownKey {}
            throw .keysUnavailable
        }
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

    /// The verifier after a fetch, or `nil` when the fetch failed or (unless
    /// `evenIfRecentlyTried`) the last attempt was less than `refreshInterval` ago. A fetch in
    /// flight is shared.
    private func refreshed(evenIfRecentlyTried: Bool = false) async -> AccessTokenVerifier? {
        let task: Task<AccessTokenVerifier?, Never>? = state.withLock { state in
            if let inFlight = state.inFlight { return inFlight }
            if !evenIfRecentlyTried, let attempted = state.attemptedAt, ContinuousClock.now - attempted < refreshInterval { return nil }
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
