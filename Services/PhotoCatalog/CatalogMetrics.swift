import Metrics

/// photo-catalog's figures on `/metrics`:
/// - `catalog_cache_lookups_total{result}`: answers by how they were produced (`hit`, `miss`,
///   `collapsed`, `stale`, `unavailable`); the hit ratio is `hit / sum`;
/// - `catalog_upstream_requests_total{endpoint,outcome}`: calls made to Unsplash;
/// - `catalog_unsplash_budget_remaining` and `catalog_unsplash_budget_limit`: the hourly budget as
///   Unsplash last reported it;
/// - `catalog_downloads_total{outcome}`: download reports (`queued`, `duplicate`, `reported`,
///   `retried`, `failed`).
final class CatalogMetrics: Sendable {
    private let factory: any MetricsFactory
    private let lookups: [String: Counter]
    private let budgetRemaining: Gauge
    private let budgetLimit: Gauge

    init(factory: any MetricsFactory) {
        self.factory = factory
        lookups = Dictionary(
            uniqueKeysWithValues: ["hit", "miss", "collapsed", "stale", "unavailable"].map { result in
                (result, Counter(label: "catalog_cache_lookups_total", dimensions: [("result", result)], factory: factory))
            }
        )
        budgetRemaining = Gauge(label: "catalog_unsplash_budget_remaining", factory: factory)
        budgetLimit = Gauge(label: "catalog_unsplash_budget_limit", factory: factory)
    }

    func answered(_ status: CacheStatus) {
        lookups[status.metricLabel]?.increment()
    }

    func upstreamCall(endpoint: String, outcome: String) {
        Counter(label: "catalog_upstream_requests_total", dimensions: [("endpoint", endpoint), ("outcome", outcome)], factory: factory).increment()
    }

    func budget(_ state: BudgetState) {
        if let remaining = state.remaining { budgetRemaining.record(remaining) }
        if let quota = state.quota { budgetLimit.record(quota) }
    }

    func download(_ outcome: String) {
        Counter(label: "catalog_downloads_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }
}

extension UpstreamAnswer.Outcome {
    var metricLabel: String {
        switch self {
        case .ok: "ok"
        case .notFound: "not_found"
        case .rateLimited: "rate_limited"
        case .failed: "failed"
        }
    }
}
