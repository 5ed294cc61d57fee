import Foundation

/// How long work that failed waits before its next attempt: doubling from `base` to `maximum`,
/// jittered (a random point in the upper half), so a crowd that failed together does not retry
/// together — a notification APNs refused for now, a mail the SMTP server did not take.
package struct Backoff: Sendable, Equatable {
    package var base: Duration
    package var maximum: Duration

    package init(base: Duration, maximum: Duration) {
        self.base = base
        self.maximum = maximum
    }

    /// The wait after failed attempt `attempt` (1-based).
    package func delay(attempt: Int) -> Duration {
        let doubled = base.seconds * pow(2, Double(min(max(attempt - 1, 0), 30)))
        let ceiling = min(doubled, maximum.seconds)
        return .milliseconds(Int64(Double.random(in: (ceiling / 2)...ceiling) * 1_000))
    }
}
