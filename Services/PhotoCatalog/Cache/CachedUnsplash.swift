import Foundation
import HTTPTypes
import Logging
import NIOCore
import PostgresNIO
import ServiceKit
import Synchronization

/// An answer ready to serve, and how it was produced.
struct ServedAnswer: Sendable {
    var answer: CachedAnswer
    var cacheStatus: CacheStatus
}

/// Unsplash behind the shared cache: fresh answers come from the cache, stale ones are served
/// while a refresh runs, misses are fetched once however many ask at the same time, and when
/// Unsplash fails, rate-limits or the budget reserve is reached, stale answers up to
/// `staleIfError` old stand in; only what was never cached gets 503 then.
///
/// Coalescing works at two levels. In a process, concurrent identical misses join one task. Across
/// replicas, that task fetches inside a Postgres transaction holding an advisory lock on the key:
/// a second replica's fetch waits for the lock, then finds the first one's answer stored and
/// serves it without calling Unsplash. The lock goes with the transaction, so a replica that dies
/// mid-fetch frees it.
final class CachedUnsplash: Sendable {
    private let upstream: UnsplashClient
    private let store: ResponseStore
    private let settings: CacheSettings
    private let budgetReserve: Int
    private let budgetWindow: Duration
    private let metrics: CatalogMetrics
    private let logger: Logger
    private let fills = Coalescer<String, FillOutcome>()
    private let hot: HotAnswers
    private let evicting = Atomic<Bool>(false)

    /// What one fetch under the key's lock came to.
    enum FillOutcome: Sendable {
        /// Fetched from Unsplash and stored.
        case stored(CachedAnswer, upstreamStatus: Int)
        /// Another replica stored a fresh answer while this one waited for the lock.
        case foundFresh(CachedAnswer)
        /// Unsplash was not asked (budget) or did not give a usable answer.
        case unavailable(Unavailable)
        /// The cache's database failed.
        case failed(String)
    }

    struct Unavailable: Sendable {
        enum Reason: Sendable { case budgetReserve, rateLimited, upstreamFailed, unreachable }
        var reason: Reason
        var upstreamStatus: Int?
        var retryAfter: Duration
    }

    init(upstream: UnsplashClient, store: ResponseStore, settings: CacheSettings, unsplash: UnsplashSettings, metrics: CatalogMetrics, logger: Logger)
    {
        self.upstream = upstream
        self.store = store
        self.settings = settings
        self.budgetReserve = unsplash.budgetReserve
        self.budgetWindow = unsplash.budgetWindow
        self.metrics = metrics
        self.logger = logger
        self.hot = HotAnswers(maxBytes: 64 << 20)
    }

    /// The answer to `request`.
    /// - Throws: a 503 `Problem` with `Retry-After` when nothing usable is cached and Unsplash
    ///   cannot be asked.
    func answer(_ request: UnsplashRequest) async throws(Problem) -> ServedAnswer {
        let key = request.cacheKey
        let now = Date()
        if let hot = hot.fresh(key, at: now) {
            touchIfDue(key, hot, now: now)
            return served(ServedAnswer(answer: hot, cacheStatus: .hit(ttl: hot.ttl(at: now))))
        }
        var cached: CachedAnswer?
        do {
            cached = try await store.lookup(key)
        } catch {
            logger.error("The cache could not be read", metadata: ["error": "\(String(reflecting: error))"])
        }
        if let cached {
            if cached.isFresh(at: now) {
                hot.remember(key, cached)
                touchIfDue(key, cached, now: now)
                return served(ServedAnswer(answer: cached, cacheStatus: .hit(ttl: cached.ttl(at: now))))
            }
            if now < cached.freshUntil.addingTimeInterval(settings.staleWhileRevalidate.seconds) {
                revalidate(request, known: cached)
                return served(ServedAnswer(answer: cached, cacheStatus: .staleWhileRevalidate(ttl: cached.ttl(at: now))))
            }
        }

        let known = cached
        let (outcome, ranIt) = await fills.run(key) { [self] in await fill(request, known: known) }
        switch outcome {
        case .stored(let answer, let status):
            return served(ServedAnswer(answer: answer, cacheStatus: ranIt ? .stored(upstreamStatus: status) : .collapsed))
        case .foundFresh(let answer):
            return served(ServedAnswer(answer: answer, cacheStatus: .collapsed))
        case .unavailable(let unavailable):
            return try staleIfError(cached, upstreamStatus: unavailable.upstreamStatus, otherwise: .unsplashUnavailable(unavailable))
        case .failed:
            return try staleIfError(cached, upstreamStatus: nil, otherwise: .cacheUnavailable)
        }
    }

    /// `cached`, stale, while it is within `staleIfError`; otherwise `problem`.
    private func staleIfError(_ cached: CachedAnswer?, upstreamStatus: Int?, otherwise problem: Problem) throws(Problem) -> ServedAnswer {
        let now = Date()
        if let cached, now < cached.freshUntil.addingTimeInterval(settings.staleIfError.seconds) {
            return served(ServedAnswer(answer: cached, cacheStatus: .staleIfError(ttl: cached.ttl(at: now), upstreamStatus: upstreamStatus)))
        }
        metrics.answered(.unavailable(upstreamStatus: upstreamStatus))
        throw problem
    }

    private func served(_ answer: ServedAnswer) -> ServedAnswer {
        metrics.answered(answer.cacheStatus)
        return answer
    }

    /// Refreshes a stale answer in the background; the caller has already been served.
    private func revalidate(_ request: UnsplashRequest, known: CachedAnswer) {
        Task { [self] in
            _ = await fills.run(request.cacheKey) { [self] in await fill(request, known: known) }
        }
    }

    /// Moves `key` forward in the eviction order, at most once a minute per key.
    private func touchIfDue(_ key: String, _ answer: CachedAnswer, now: Date) {
        guard now.timeIntervalSince(answer.lastUsedAt) > 60 else { return }
        var touched = answer
        touched.lastUsedAt = now
        hot.remember(key, touched)
        Task { [store, logger] in
            do { try await store.touch(key) } catch {
                logger.debug("A cache entry could not be touched", metadata: ["error": "\(error.logDescription)"])
            }
        }
    }

    /// Fetches `request` from Unsplash under the key's cluster-wide lock, unless another replica
    /// stored a fresh answer meanwhile or the budget says no.
    private func fill(_ request: UnsplashRequest, known: CachedAnswer?) async -> FillOutcome {
        let key = request.cacheKey
        let outcome: FillOutcome
        do {
            outcome = try await store.client.withTransaction(settings: [], logger: logger) { [self] connection in
                try await store.lockKey(key, timeout: .seconds(30), on: connection)
                if let current = try await store.lookup(key, on: connection), current.isFresh(at: Date()),
                    current.storedAt > (known?.storedAt ?? .distantPast)
                {
                    return .foundFresh(current)
                }
                var budget = try await BudgetState.read(on: connection, logger: logger)
                if let wait = budget.wait(reserve: budgetReserve, now: Date()) {
                    return .unavailable(Unavailable(reason: .budgetReserve, upstreamStatus: nil, retryAfter: wait))
                }
                let answer: UpstreamAnswer
                do {
                    answer = try await upstream.get(request)
                } catch {
                    metrics.upstreamCall(endpoint: request.endpointLabel, outcome: "unreachable")
                    return .unavailable(Unavailable(reason: .unreachable, upstreamStatus: nil, retryAfter: .seconds(10)))
                }
                metrics.upstreamCall(endpoint: request.endpointLabel, outcome: answer.outcome.metricLabel)
                let now = Date()
                budget.observe(
                    quota: answer.quota,
                    remaining: answer.remaining,
                    rateLimited: answer.outcome == .rateLimited,
                    now: now,
                    window: budgetWindow
                )
                try await budget.write(on: connection, logger: logger)
                metrics.budget(budget)
                switch answer.outcome {
                case .ok, .notFound:
                    let total = answer.total ?? Self.totalInBody(answer.body, kind: request.kind)
                    let lifetime = answer.outcome == .ok ? settings.lifetime(of: request.kind) : settings.listLifetime
                    let cached = CachedAnswer(status: answer.status, body: answer.body, total: total, storedAt: now, lifetime: lifetime)
                    try await store.store(key, cached, on: connection)
                    return .stored(cached, upstreamStatus: answer.status)
                case .rateLimited:
                    let wait = budget.wait(reserve: budgetReserve, now: now) ?? budgetWindow
                    return .unavailable(Unavailable(reason: .rateLimited, upstreamStatus: answer.status, retryAfter: wait))
                case .failed(let status):
                    return .unavailable(Unavailable(reason: .upstreamFailed, upstreamStatus: status, retryAfter: .seconds(30)))
                }
            }
        } catch {
            logger.error("A cache fill failed", metadata: ["key": "\(key)", "error": "\(String(reflecting: error))"])
            return .failed("\(error)")
        }
        if case .stored(let answer, _) = outcome {
            hot.remember(key, answer)
            evictInBackground()
        } else if case .foundFresh(let answer) = outcome {
            hot.remember(key, answer)
        }
        return outcome
    }

    /// Keeps the table within its bounds after a store; one eviction at a time.
    private func evictInBackground() {
        guard evicting.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        Task { [self] in
            defer { evicting.store(false, ordering: .releasing) }
            do {
                let removed = try await store.evict()
                if removed > 0 { logger.info("Evicted least recently used cache entries", metadata: ["count": "\(removed)"]) }
            } catch {
                logger.warning("Cache eviction failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    /// A search answer carries its total in the body when the header is missing.
    private static func totalInBody(_ body: ByteBuffer, kind: UnsplashRequest.Kind) -> Int? {
        guard kind == .search, let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
            return nil
        }
        return object["total"] as? Int
    }
}

/// Fresh answers kept in memory (at most `maxBytes` of bodies), so a hot search costs no database
/// round trip. Only fresh answers are served from here, and an answer is never replaced while
/// fresh, so replicas stay coherent.
final class HotAnswers: Sendable {
    private struct State {
        var answers: [String: CachedAnswer] = [:]
        var bytes = 0

        mutating func remove(_ key: String) {
            if let removed = answers.removeValue(forKey: key) { bytes -= removed.body.readableBytes }
        }
    }

    private let maxBytes: Int
    private let state = Mutex(State())

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    func fresh(_ key: String, at now: Date) -> CachedAnswer? {
        state.withLock { state in
            guard let answer = state.answers[key] else { return nil }
            if answer.isFresh(at: now) { return answer }
            state.remove(key)
            return nil
        }
    }

    func remember(_ key: String, _ answer: CachedAnswer) {
        let size = answer.body.readableBytes
        guard size <= maxBytes / 8 else { return }
        state.withLock { state in
            state.remove(key)
            if state.bytes + size > maxBytes {
                // Expired ones first; then any, until the new one fits.
                let now = Date()
                for (key, answer) in state.answers where !answer.isFresh(at: now) { state.remove(key) }
                while state.bytes + size > maxBytes, let victim = state.answers.keys.first { state.remove(victim) }
            }
            state.answers[key] = answer
            state.bytes += size
        }
    }
}

extension UnsplashRequest {
    /// The `endpoint` label of `catalog_upstream_requests_total`.
    var endpointLabel: String {
        switch kind {
        case .list: "list"
        case .photo: "photo"
        case .search: "search"
        case .randomPool: "random"
        }
    }
}

extension Problem {
    static func unsplashUnavailable(_ unavailable: CachedUnsplash.Unavailable) -> Problem {
        let seconds = max(1, Int((unavailable.retryAfter.seconds).rounded(.up)))
        var headers = HTTPFields()
        headers[.retryAfter] = String(seconds)
        headers[.cacheStatus] = CacheStatus.unavailable(upstreamStatus: unavailable.upstreamStatus).headerValue
        let detail: String
        switch unavailable.reason {
        case .budgetReserve: detail = "Unsplash's hourly request budget is down to its reserve; only cached answers are served until it resets."
        case .rateLimited: detail = "Unsplash is rate-limiting Splash; only cached answers are served until the limit resets."
        case .upstreamFailed: detail = "Unsplash answered with an error and this answer is not cached."
        case .unreachable: detail = "Unsplash could not be reached and this answer is not cached."
        }
        return Problem(status: .serviceUnavailable, type: "unsplash-unavailable", title: "Unsplash is unavailable", detail: detail, headers: headers)
    }

    static var cacheUnavailable: Problem {
        var headers = HTTPFields()
        headers[.retryAfter] = "5"
        return Problem(
            status: .serviceUnavailable,
            type: "cache-unavailable",
            title: "The photo cache is unavailable",
            detail: "The catalog's database could not be reached; try again shortly.",
            headers: headers
        )
    }
}
