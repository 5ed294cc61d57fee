import Metrics
import Prometheus

/// The metrics of one service: a Prometheus registry and the swift-metrics factory writing into it.
///
/// Each application gets its own instance, so tests can build several applications in one process
/// and read each one's `/metrics` apart. `ServiceMain` also installs the factory as the process-wide
/// `MetricsSystem`, so libraries that use the global API land in the same registry.
package struct ServiceMetrics: Sendable {
    package let registry: PrometheusCollectorRegistry
    package let factory: PrometheusMetricsFactory
    /// Records answered requests into `registry`; shared by everything that answers them.
    package let requests: RequestRecorder

    /// Latency buckets for HTTP handlers, in seconds: 1 ms to 10 s.
    package static let latencyBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2_500), .seconds(5), .seconds(10),
    ]

    /// `http_requests_total{method,route,status}`.
    package static var httpRequests: MetricNameDescriptor {
        MetricNameDescriptor(
            metricName: "http_requests",
            unitName: "total",
            helpText: "HTTP requests answered, by method, route template and status."
        )
    }

    /// `http_request_duration_seconds{method,route,status}`, a histogram.
    package static var httpRequestDuration: MetricNameDescriptor {
        MetricNameDescriptor(
            metricName: "http_request_duration",
            unitName: "seconds",
            helpText: "Time to answer HTTP requests, by method, route template and status."
        )
    }

    package init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        self.registry = registry
        self.factory = factory
        self.requests = RequestRecorder(registry: registry)
    }

    /// The Prometheus text exposition of every metric.
    package func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(4_096)
        registry.emit(into: &buffer)
        return buffer
    }
}
