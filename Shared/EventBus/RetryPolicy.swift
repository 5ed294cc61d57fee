/// How often a failing handler is retried before its event goes to the dead-letter topic, and how
/// long to wait between attempts: `initialBackoff`, doubling, at most `maximumBackoff`.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in total, the first included.
    public var attempts: Int
    public var initialBackoff: Duration
    public var maximumBackoff: Duration

    public init(attempts: Int = 5, initialBackoff: Duration = .milliseconds(200), maximumBackoff: Duration = .seconds(10)) {
        self.attempts = max(1, attempts)
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// The wait after failed attempt `attempt` (1-based).
    public func backoff(after attempt: Int) -> Duration {
        var delay = initialBackoff
        for _ in 1..<max(1, attempt) {
            delay *= 2
            if delay >= maximumBackoff { return maximumBackoff }
        }
        return min(delay, maximumBackoff)
    }
}
