import HTTPTypes
import Logging
import Prometheus
import Synchronization

/// Records each answered request: `http_requests_total` and `http_request_duration_seconds` by
/// method, route template and status, and one access-log line (method, path, status, duration).
///
/// The metric handles of each label combination are looked up in the registry once and kept, so
/// a request costs no registry lock and no label arrays.
package final class RequestRecorder: Sendable {
    private struct Labels: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    private struct Handles: Sendable {
        let requests: Prometheus.Counter
        let duration: DurationHistogram
    }

    private let registry: PrometheusCollectorRegistry
    private let handles = Mutex<[Labels: Handles]>([:])

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// - Parameters:
    ///   - route: the matched route's template (`/auth/v1/**`), or `unmatched`.
    ///   - logger: the request's logger (with its `request_id`); health checks log at debug level.
    package func record(method: HTTPRequest.Method, path: String, route: String, status: HTTPResponse.Status, elapsed: Duration, logger: Logger) {
        let labels = Labels(method: method.rawValue, route: route, status: status.code)
        let found = handles.withLock { $0[labels] } ?? makeHandles(labels)
        found.requests.increment()
        found.duration.record(elapsed)

        let level: Logger.Level = HealthRoutes.paths.contains(path) ? .debug : .info
        logger.log(
            level: level,
            "request",
            metadata: [
                "method": .string(method.rawValue),
                "path": .string(path),
                "status": .stringConvertible(status.code),
                "duration_ms": .stringConvertible((elapsed.milliseconds * 100).rounded() / 100),
            ]
        )
    }

    private func makeHandles(_ labels: Labels) -> Handles {
        let pairs = [("method", labels.method), ("route", labels.route), ("status", String(labels.status))]
        let made = Handles(
            requests: registry.makeCounter(descriptor: ServiceMetrics.httpRequests, labels: pairs),
            duration: registry.makeDurationHistogram(
                descriptor: ServiceMetrics.httpRequestDuration,
                labels: pairs,
                buckets: ServiceMetrics.latencyBuckets
            )
        )
        // The registry hands out the same handles for the same labels, so a race here is harmless.
        handles.withLock { $0[labels] = made }
        return made
    }
}
