import Foundation
import HTTPTypes
import Synchronization

/// How many events a key may have per window: `30/5m` in configuration.
package struct RateLimit: Sendable, Equatable {
    package var count: Int
    package var window: Duration

    package init(count: Int, window: Duration) {
        self.count = count
        self.window = window
    }

    /// Parses `<count>/<duration>`, e.g. `30/5m` or `10/15m`.
    package static func parse(_ text: String) -> RateLimit? {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, let count = Int(parts[0].trimmingCharacters(in: .whitespaces)), count > 0,
            let window = DurationFormat.parse(String(parts[1]).trimmingCharacters(in: .whitespaces)), window > .zero
        else { return nil }
        return RateLimit(count: count, window: window)
    }
}

/// A token bucket per key (a client address, an account), kept in memory.
///
/// Each key starts with `count` tokens and regains them evenly over `window`, so a client that
/// spent its allowance gets one more request every `window / count` rather than waiting for a
/// fixed window to roll over. Keys that are back to a full bucket are forgotten, which keeps the
/// table as small as the set of clients currently being limited.
package final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    package let limit: RateLimit
    private let refillPerSecond: Double
    private let buckets = Mutex<[String: Bucket]>([:])

    package init(_ limit: RateLimit) {
        self.limit = limit
        let seconds = limit.window.milliseconds / 1_000
        self.refillPerSecond = Double(limit.count) / seconds
    }

    /// Takes one token for `key`. Returns `nil` when allowed, else the whole seconds until a
    /// token is available (for `Retry-After`).
    package func acquire(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        take(key, now: now).retryAfter
    }

    /// Takes one token for `key` when it has one, and says what is left, for `RateLimit-*` headers.
    package func take(_ key: String, now: ContinuousClock.Instant = .now) -> RateLimitDecision {
        buckets.withLock { buckets in
            var bucket = refilled(buckets[key], now: now)
            let allowed = bucket.tokens >= 1
            if allowed {
                bucket.tokens -= 1
                buckets[key] = bucket
                pruneIfLarge(&buckets, now: now)
            }
            let untilFull = max(0, Int(((Double(limit.count) - bucket.tokens) / refillPerSecond).rounded(.up)))
            return RateLimitDecision(
                allowed: allowed,
                remaining: Int(bucket.tokens),
                resetSeconds: untilFull,
                retryAfter: allowed ? nil : retryAfter(bucket)
            )
        }
    }

    /// The seconds until `key` has a token again, or `nil` when it has one now; takes nothing.
    package func waitTime(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        buckets.withLock { buckets in
            let bucket = refilled(buckets[key], now: now)
            return bucket.tokens >= 1 ? nil : retryAfter(bucket)
        }
    }

    private func refilled(_ bucket: Bucket?, now: ContinuousClock.Instant) -> Bucket {
        guard var bucket else { return Bucket(tokens: Double(limit.count), updated: now) }
        let elapsed = now - bucket.updated
        let seconds = elapsed.milliseconds / 1_000
        bucket.tokens = min(Double(limit.count), bucket.tokens + seconds * refillPerSecond)
        bucket.updated = now
        return bucket
    }

    private func retryAfter(_ bucket: Bucket) -> Int {
        max(1, Int(((1 - bucket.tokens) / refillPerSecond).rounded(.up)))
    }

    private func pruneIfLarge(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        guard buckets.count > 10_000 else { return }
        buckets = buckets.filter { refilled($0.value, now: now).tokens < Double(limit.count) }
    }
}

/// The outcome of `RateLimiter.take(_:)`.
package struct RateLimitDecision: Sendable, Equatable {
    package var allowed: Bool
    /// Whole requests left now.
    package var remaining: Int
    /// Seconds until the bucket is full again.
    package var resetSeconds: Int
    /// Seconds until the next request is allowed, when this one was not.
    package var retryAfter: Int?

    /// `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (the IETF RateLimit header
    /// fields draft) and, for a refusal, `Retry-After`.
    package func headers(limit: RateLimit, includeRetryAfter: Bool) -> HTTPFields {
        var fields = HTTPFields()
        forEachField(limit: limit, includeRetryAfter: includeRetryAfter) { fields[$0] = $1 }
        return fields
    }

    /// The fields of `headers(limit:includeRetryAfter:)`, one by one, for a caller that writes
    /// them out itself (the gateway's direct path writes heads as bytes).
    package func forEachField(limit: RateLimit, includeRetryAfter: Bool, _ body: (HTTPField.Name, String) -> Void) {
        body(.rateLimitLimit, String(limit.count))
        body(.rateLimitRemaining, String(remaining))
        body(.rateLimitReset, String(resetSeconds))
        if includeRetryAfter, let retryAfter {
            body(.retryAfter, String(retryAfter))
        }
    }
}

extension HTTPField.Name {
    package static let rateLimitLimit = Self("RateLimit-Limit")!
    package static let rateLimitRemaining = Self("RateLimit-Remaining")!
    package static let rateLimitReset = Self("RateLimit-Reset")!
}

extension ConfigurationReader {
    /// A `RateLimit` from `<count>/<duration>`, e.g. `30/5m`.
    package func rateLimit(_ name: String, default limit: RateLimit) throws(ConfigurationError) -> RateLimit {
        try value(name, expected: "a count per duration such as 30/5m", default: limit, parse: RateLimit.parse)
    }
}
