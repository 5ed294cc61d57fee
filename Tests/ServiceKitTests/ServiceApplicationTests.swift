import AsyncHTTPClient
import Foundation
import NIOCore
import ServiceKit
import TestSupport
import Testing

@Suite("A service built with ServiceKit")
struct ServiceApplicationTests {
    @Test func answersItsRoutesAndEchoesACallersRequestID() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            let response = try await app.request(.get, "/hello", headers: [("X-Request-Id", "trace-abc.123")])
            #expect(response.status == 200)
            #expect(response.text == "hello")
            #expect(response.headers["x-request-id"] == "trace-abc.123")
        }
    }

    @Test func generatesARequestIDWhenTheCallerSendsNoneOrAMalformedOne() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            let missing = try await app.request(.get, "/hello")
            let generated = try #require(missing.headers["x-request-id"])
            #expect(UUID(uuidString: generated) != nil)

            let oversized = String(repeating: "a", count: 200)
            let replaced = try await app.request(.get, "/hello", headers: [("X-Request-Id", oversized)])
            #expect(replaced.headers["x-request-id"] != oversized)
            #expect(UUID(uuidString: replaced.headers["x-request-id"] ?? "") != nil)
        }
    }

    @Test func turnsADomainErrorIntoProblemJSON() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            let response = try await app.request(.get, "/widgets/42", headers: [("X-Request-Id", "req-1")])
            #expect(response.status == 404)
            #expect(response.headers["content-type"] == "application/problem+json")
            let problem = try response.json()
            #expect(problem["type"] as? String == "urn:splash:problem:widget-not-found")
            #expect(problem["title"] as? String == "Widget not found")
            #expect(problem["status"] as? Int == 404)
            #expect(problem["detail"] as? String == "There is no widget 42.")
            #expect(problem["instance"] as? String == "/widgets/42")
            #expect(problem["requestId"] as? String == "req-1")
        }
    }

    @Test func listsEveryInvalidFieldOfAValidationProblem() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            let response = try await app.request(.post, "/widgets", body: .bytes(ByteBuffer(string: "{}")))
            #expect(response.status == 422)
            let problem = try response.json()
            #expect(problem["type"] as? String == "urn:splash:problem:validation")
            let errors = try #require(problem["errors"] as? [[String: String]])
            #expect(
                errors == [
                    ["pointer": "#/name", "detail": "must not be empty"],
                    ["parameter": "dry_run", "detail": "must be true or false"],
                ]
            )
        }
    }

    @Test func answersUnknownRoutesWithAProblem() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            let response = try await app.request(.get, "/nowhere")
            #expect(response.status == 404)
            #expect(response.headers["content-type"] == "application/problem+json")
            #expect(try response.json()["type"] as? String == "about:blank")
        }
    }

    @Test func hidesAnUnexpectedErrorBehindA500ButLogsItWithTheRequestID() async throws {
        let logs = CapturedLogs()
        try await withRunningApplication(makeTinyApplication(logger: logs.logger())) { app in
            let response = try await app.request(.get, "/boom", headers: [("X-Request-Id", "req-boom")])
            #expect(response.status == 500)
            #expect(!response.text.contains("db-7"))
            #expect(!response.text.contains("splash_auth"))
            let problem = try response.json()
            #expect(problem["title"] as? String == "Internal Server Error")
            #expect(problem["requestId"] as? String == "req-boom")
        }
        let logged = try #require(logs.all.first { $0.level == .error })
        #expect(logged.metadata["request_id"] == "req-boom")
        #expect(logged.metadata["error"]?.contains("db-7.internal:5432 refused") == true)
    }

    @Test func rejectsABodyOverTheRouteLimitWith413() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            let small = try await app.request(.post, "/small/echo", body: .bytes(ByteBuffer(string: "fits")))
            #expect(small.status == 200)
            #expect(small.text == "fits")

            let declared = try await app.request(.post, "/small/echo", body: .bytes(ByteBuffer(string: String(repeating: "x", count: 17))))
            #expect(declared.status == 413)
            #expect(declared.headers["content-type"] == "application/problem+json")
            #expect(try declared.json()["type"] as? String == "urn:splash:problem:body-too-large")
        }
    }

    @Test func rejectsAChunkedBodyThatGrowsPastTheLimitWhileAHandlerStreamsIt() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            let fits = [ByteBuffer(string: "01234567"), ByteBuffer(string: "89")]
            let accepted = try await app.request(.post, "/small/count", body: .stream(fits.async, length: .unknown))
            #expect(accepted.status == 200)
            #expect(accepted.text == "10")

            let grows = (0..<4).map { _ in ByteBuffer(string: "0123456789") }
            let rejected = try await app.request(.post, "/small/count", body: .stream(grows.async, length: .unknown))
            #expect(rejected.status == 413)
            #expect(try rejected.json()["type"] as? String == "urn:splash:problem:body-too-large")
        }
    }

    @Test func abandonsAHandlerThatOutlivesTheRouteTimeout() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            let start = ContinuousClock.now
            let response = try await app.request(.get, "/slow")
            #expect(response.status == 503)
            #expect(try response.json()["type"] as? String == "urn:splash:problem:request-timeout")
            #expect(start.duration(to: .now) < .seconds(3))
        }
    }

    @Test func countsRequestsByRouteAndStatusInPrometheusFormat() async throws {
        let metrics = ServiceMetrics()
        try await withRunningApplication(makeTinyApplication(metrics: metrics)) { app in
            _ = try await app.request(.get, "/hello")
            _ = try await app.request(.get, "/hello")
            _ = try await app.request(.get, "/widgets/1")
            _ = try await app.request(.get, "/widgets/2")
            _ = try await app.request(.get, "/widgets/3")
            let exposition = try await app.request(.get, "/metrics")
            #expect(exposition.status == 200)
            #expect(exposition.headers["content-type"]?.hasPrefix("text/plain") == true)
            let text = exposition.text
            #expect(text.contains(#"http_requests_total{method="GET",route="/hello",status="200"} 2"#))
            // Labelled by the route template, not the raw path.
            #expect(text.contains(#"http_requests_total{method="GET",route="/widgets/{id}",status="404"} 3"#))
            #expect(text.contains(#"http_request_duration_seconds_count{method="GET",route="/hello",status="200"} 2"#))
            #expect(text.contains(#"http_request_duration_seconds_bucket{method="GET",route="/hello",status="200",le="+Inf"} 2"#))
        }
    }

    @Test func reportsReadinessOfItsDependencies() async throws {
        struct Unreachable: Error, CustomStringConvertible { var description: String { "connection refused" } }
        let ready = makeTinyApplication(readiness: [ReadinessCheck("postgres") {}])
        try await withRunningApplication(ready) { app in
            #expect(try await app.request(.get, "/healthz").status == 200)
            let response = try await app.request(.get, "/readyz")
            #expect(response.status == 200)
            #expect((try response.json()["checks"] as? [String: String]) == ["postgres": "ok"])
        }
        let unready = makeTinyApplication(readiness: [ReadinessCheck("postgres") {}, ReadinessCheck("kafka") { throw Unreachable() }])
        try await withRunningApplication(unready) { app in
            #expect(try await app.request(.get, "/healthz").status == 200)
            let response = try await app.request(.get, "/readyz")
            #expect(response.status == 503)
            let checks = try #require(try response.json()["checks"] as? [String: String])
            #expect(checks["postgres"] == "ok")
            #expect(checks["kafka"] == "failed: connection refused")
        }
    }

    @Test func logsEveryRequestWithMethodPathStatusDurationAndRequestID() async throws {
        let logs = CapturedLogs()
        try await withRunningApplication(makeTinyApplication(logger: logs.logger())) { app in
            _ = try await app.request(.get, "/widgets/9", headers: [("X-Request-Id", "req-log")])
        }
        let line = try #require(logs.all.first { $0.message == "request" && $0.metadata["request_id"] == "req-log" })
        #expect(line.level == .info)
        #expect(line.metadata["method"] == "GET")
        #expect(line.metadata["path"] == "/widgets/9")
        #expect(line.metadata["status"] == "404")
        #expect(Double(line.metadata["duration_ms"] ?? "") != nil)
    }

    @Test func letsAnInFlightRequestFinishDuringGracefulShutdown() async throws {
        try await withRunningApplication(makeTinyApplication()) { app in
            async let response = app.request(.get, "/unhurried?ms=700")
            try await Task.sleep(for: .milliseconds(200))
            await app.beginShutdown()
            let finished = try await response
            #expect(finished.status == 200)
            #expect(finished.text == "finished")
        }
    }
}
