import Foundation
import LocalStack

/// Runs wrk (the HTTP load generator, Debian's `wrk`) and reads its report: what the benchmarks
/// measure HTTP throughput and latency with.
package enum Wrk {
    package struct Result: Sendable {
        package var requestsPerSecond: Double
        /// Latency percentiles in milliseconds.
        package var p50: Double, p90: Double, p99: Double
        /// wrk's "Non-2xx or 3xx responses" line, when there were any.
        package var errors: String?
    }

    /// `wrk -t2 -c<connections> -d<seconds>s --latency` on `url` (one thread for one connection:
    /// wrk wants at least a connection per thread), each request with `headers` (`Name: value`).
    package static func run(_ url: String, seconds: Int, connections: Int, headers: [String] = []) async throws -> Result {
        let output = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/wrk"),
            ["-t\(min(2, connections))", "-c\(connections)", "-d\(seconds)s", "--latency"] + headers.flatMap { ["-H", $0] } + [url]
        ).runToCompletion()
        var result = Result(requestsPerSecond: 0, p50: 0, p90: 0, p99: 0)
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            switch first {
            case "Requests/sec:": result.requestsPerSecond = Double(fields[1]) ?? 0
            case "50%": result.p50 = milliseconds(fields[1])
            case "90%": result.p90 = milliseconds(fields[1])
            case "99%": result.p99 = milliseconds(fields[1])
            case "Non-2xx": result.errors = String(line)
            default: break
            }
        }
        return result
    }

    /// Milliseconds of a wrk duration (`812.00us`, `1.20ms`, `2.01s`).
    static func milliseconds(_ text: Substring) -> Double {
        if text.hasSuffix("us") { return (Double(text.dropLast(2)) ?? 0) / 1_000 }
        if text.hasSuffix("ms") { return Double(text.dropLast(2)) ?? 0 }
        if text.hasSuffix("s") { return (Double(text.dropLast(1)) ?? 0) * 1_000 }
        return Double(text) ?? 0
    }
}
