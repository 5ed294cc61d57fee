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
///
/// Tokens the keys verified are remembered with their claims (`VerifiedTokens`): an app sends the
/// same access token with every call for up to an hour, and finding it again costs far less than a
/// P-256 signature check and two JSON decodes. Only the very same token string is found; its expiry
/// is checked on every use; all are forgotten when a fetch brings different keys, and none is used
/// while the keys are past their age.
package final class KeySetCache: Service, Sendable {
    private struct State {
        var verifier: AccessTokenVerifier?
        var fetchedAt: ContinuousClock.Instant?
        var attemptedAt: ContinuousClock.Instant?
        var inFlight: Task<Keys?, Never>?
        var verified: VerifiedTokens
        /// Bumped whenever the keys change: a token verified with the keys before is not stored.
        var generation = 0

        var keys: Keys? { verifier.map { Keys(verifier: $0, generation: generation) } }
    }

    /// A verifier of the keys and which keys they are.
    private struct Keys {
        var verifier: AccessTokenVerifier
        var generation: Int
    }

    private let url: URL
    private let issuer: String
    private let refreshInterval: Duration
    private let maxAge: Duration
    private let client: HTTPClient
    private let logger: Logger
    private let state: Mutex<State>
    /// Users deleted lately, whose still-valid tokens are refused (`.userDeleted`).
    package let deletedUsers: DeletedUsers

    /// - Parameter remembering: how many verified tokens are kept (up to twice as many at times).
    package init(
        url: URL,
        issuer: String,
        refreshInterval: Duration,
        maxAge: Duration = .seconds(3_600),
        remembering: Int = 4_096,
        deletedUsers: DeletedUsers = DeletedUsers(),
        client: HTTPClient,
        logger: Logger
    ) {
        self.deletedUsers = deletedUsers
        self.url = url
        self.issuer = issuer
        self.refreshInterval = refreshInterval
        self.maxAge = maxAge
        self.client = client
        self.logger = logger
        self.state = Mutex(State(verified: VerifiedTokens(capacity: remembering)))
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
        let claims = try await verifySignedToken(token)
        if let user = claims.userID, deletedUsers.contains(user) { throw .userDeleted }
        return claims
    }

    private func verifySignedToken(_ token: String) async throws(AccessTokenError) -> AccessTokenClaims {
        let (current, cached) = state.withLock { state in (self.current(&state, token), state.keys) }
        if let (keys, remembered) = current {
            if let remembered, keys.verifier.isCurrent(remembered) { return remembered }
            do throws(AccessTokenError) {
                return try verify(token, with: keys)
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
        return try verify(token, with: fresh)
    }

    /// The claims of `token` when the keys at hand verify it; `nil` when they do not or when
    /// verifying would take a fetch (no keys yet, keys past their age, an unknown key id).
    /// A deleted user's token answers `nil` too (`verify` then says why).
    package func verifyWithoutFetching(_ token: String) -> AccessTokenClaims? {
        guard let (keys, remembered) = state.withLock({ state in self.current(&state, token) }) else { return nil }
        let claims: AccessTokenClaims?
        if let remembered {
            claims = keys.verifier.isCurrent(remembered) ? remembered : nil
        } else {
            claims = try? verify(token, with: keys)
        }
        guard let claims, !(claims.userID.map { deletedUsers.contains($0) } ?? false) else { return nil }
        return claims
    }

    /// How many verified tokens are remembered now.
    package var rememberedTokenCount: Int { state.withLock { $0.verified.count } }

    /// The keys to verify with when they are not past their age, and the claims of `token` if
    /// they verified it before.
    private func current(_ state: inout State, _ token: String) -> (Keys, AccessTokenClaims?)? {
        guard let keys = state.keys, let fetchedAt = state.fetchedAt, ContinuousClock.now - fetchedAt <= maxAge else { return nil }
        return (keys, state.verified.claims(for: token))
    }

    /// Verifies `token` with `keys` and remembers its claims, unless different keys have come
    /// since.
    private func verify(_ token: String, with keys: Keys) throws(AccessTokenError) -> AccessTokenClaims {
        let claims = try keys.verifier.verify(token)
        state.withLock { state in
            if state.generation == keys.generation { state.verified.insert(claims, for: token) }
        }
        return claims
    }

    /// The keys after a fetch, or `nil` when the fetch failed or (unless
    /// `evenIfRecentlyTried`) the last attempt was less than `refreshInterval` ago. A fetch in
    /// flight is shared.
    private func refreshed(evenIfRecentlyTried: Bool = false) async -> Keys? {
        let task: Task<Keys?, Never>? = state.withLock { state in
            if let inFlight = state.inFlight { return inFlight }
            if !evenIfRecentlyTried, let attempted = state.attemptedAt, ContinuousClock.now - attempted < refreshInterval { return nil }
            state.attemptedAt = .now
            let task = Task { await self.fetch() }
            state.inFlight = task
            return task
        }
        return await task?.value
    }

    private func fetch() async -> Keys? {
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
            let keys = state.withLock { state in
                // With the same keys, what they verified stands.
                if state.verifier.map({ !$0.acceptsTheSameTokens(as: verifier) }) ?? true {
                    state.generation += 1
                    state.verified.removeAll()
                }
                state.verifier = verifier
                state.fetchedAt = .now
                return state.keys
            }
            logger.info("Fetched auth's key set", metadata: ["keys": "\(keySet.verificationKeys.map(\.id))"])
            return keys
        } catch {
            logger.warning("auth's key set could not be fetched", metadata: ["url": "\(url)", "error": "\(error)"])
            return nil
        }
    }
}
