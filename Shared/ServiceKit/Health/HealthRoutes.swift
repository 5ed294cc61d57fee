import Foundation
import Hummingbird

/// `GET /healthz` (the process answers), `GET /readyz` (its dependencies answer) and
/// `GET /metrics` (Prometheus text format).
package struct HealthRoutes: Sendable {
    /// The paths these routes serve; access logs keep them at debug level.
    package static let paths: Set<String> = ["/healthz", "/readyz", "/metrics"]

    private let checks: [ReadinessCheck]
    private let metrics: ServiceMetrics
    private let probeTimeout: Duration

    package init(checks: [ReadinessCheck], metrics: ServiceMetrics, probeTimeout: Duration = .seconds(2)) {
        self.checks = checks
        self.metrics = metrics
        self.probeTimeout = probeTimeout
    }

    package func addRoutes<Context: ServiceRequestContext>(to router: Router<Context>) {
        router.get("/healthz") { _, _ in
            Self.json(.ok, ["status": "ok"])
        }
        router.get("/readyz") { _, _ in
            try await self.readiness()
        }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
            )
        }
    }

    /// Runs every probe at once, each bounded by `probeTimeout`; 200 when all pass, 503 otherwise.
    private func readiness() async throws -> Response {
        let results = await withTaskGroup(of: (String, String?).self) { group in
            for check in checks {
                group.addTask {
                    do {
                        try await withTimeout(probeTimeout, error: ProbeTimeout(timeout: probeTimeout), operation: check.probe)
                        return (check.name, nil)
                    } catch {
                        return (check.name, String(describing: error))
                    }
                }
            }
            var results: [String: String?] = [:]
            for await (name, failure) in group {
                results[name] = failure
            }
            return results
        }
        let ready = results.values.allSatisfy { $0 == nil }
        let report = results.mapValues { failure in failure.map { "failed: \($0)" } ?? "ok" }
        return Self.json(ready ? .ok : .serviceUnavailable, ["status": ready ? "ready" : "unavailable", "checks": report])
    }

    private static func json(_ status: HTTPResponse.Status, _ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

private struct ProbeTimeout: Error, CustomStringConvertible {
    var timeout: Duration
    var description: String { "no answer within \(DurationFormat.format(timeout))" }
}
