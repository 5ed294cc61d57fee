import ServiceKit

/// The gateway's own error responses (RFC 9457 problem JSON).
enum GatewayProblem {
    static func notConfigured(_ upstream: String) -> Problem {
        Problem(
            status: .serviceUnavailable,
            type: "upstream-not-configured",
            title: "Service not available",
            detail: "This gateway has no \(upstream) service configured."
        )
    }

    static func unavailable(_ upstream: String) -> Problem {
        Problem(
            status: .serviceUnavailable,
            type: "upstream-unavailable",
            title: "Service unavailable",
            detail: "The \(upstream) service cannot be reached; try again shortly.",
            headers: [.retryAfter: "1"]
        )
    }

    static func timedOut(_ upstream: String) -> Problem {
        Problem(
            status: .gatewayTimeout,
            type: "upstream-timeout",
            title: "Service timed out",
            detail: "The \(upstream) service did not answer in time."
        )
    }

    /// 429 `rate-limited`, with `Retry-After` and the `RateLimit-*` headers of `decision`.
    static func rateLimited(_ decision: RateLimitDecision, limit: RateLimit, title: String, detail: String) -> Problem {
        Problem(
            status: .tooManyRequests,
            type: "rate-limited",
            title: title,
            detail: detail,
            headers: decision.headers(limit: limit, includeRetryAfter: true)
        )
    }

    static func badGateway(_ upstream: String) -> Problem {
        Problem(status: .badGateway, type: "upstream-failed", title: "Bad gateway", detail: "The \(upstream) service broke off its answer.")
    }
}
