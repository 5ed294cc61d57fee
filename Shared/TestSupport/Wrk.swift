import Foundation
import LocalStack

/// Runs wrk (the HTTP load generator, Debian's `wrk`) and reads its report: what the benchmarks
/// measure HTTP throughput and latency with.
package enum Wrk {
    package struct Result: Sendable {
        package var requestsPerSecond: Double
        /// Every request's latency, as wrk recorded it (to the microsecond).
        package var latency: LatencyHistogram
        /// wrk's "Non-2xx or 3xx responses" line, when there were any.
        package var errors: String?

        /// Latency percentiles in milliseconds.
        package var p50: Double { latency.percentile(50) }
        package var p90: Double { latency.percentile(90) }
        package var p99: Double { latency.percentile(99) }
    }

    /// `wrk -t2 -c<connections> -d<seconds>s` on `url` (one thread for one connection: wrk wants at
    /// least a connection per thread), each request with `headers` (`Name: value`).
    package static func run(_ url: String, seconds: Int, connections: Int, headers: [String] = []) async throws -> Result {
        let output = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/wrk"),
            ["-t\(min(2, connections))", "-c\(connections)", "-d\(seconds)s", "-s", try histogramScript.get()] + headers.flatMap { ["-H", $0] } + [url]
        ).runToCompletion()
        return Result(report: output)
    }

    /// A `-s`cript whose `done` prints every distinct latency wrk recorded and how often:
    /// `latency-us <microseconds> <count>`, a line each.
    private static let histogramScript = Swift.Result<String, any Error> {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("wrk-histogram-\(getpid()).lua")
        try """
        done = function(summary, latency, requests)
          for i = 1, #latency do
            local microseconds, count = latency(i)
            io.write(string.format("latency-us %d %d\\n", microseconds, count))
          end
        end
        """.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }
}

extension Wrk.Result {
    /// Reads wrk's report, with the lines `histogramScript` adds.
    package init(report: String) {
        self.init(requestsPerSecond: 0, latency: LatencyHistogram())
        for line in report.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            switch first {
            case "Requests/sec:": requestsPerSecond = Double(fields[1]) ?? 0
            case "latency-us" where fields.count == 3:
                if let microseconds = Int(fields[1]), let count = Int(fields[2]) { latency.add(microseconds, count: count) }
            case "Non-2xx": errors = String(line)
            default: break
            }
        }
    }
}

/// Latencies counted by the microsecond: one wrk run's, or several runs' merged, so a percentile
/// can be read over all the requests of interleaved runs.
package struct LatencyHistogram: Sendable {
    private var counts: [Int: Int] = [:]
    package private(set) var count = 0

    package init() {}

    package mutating func add(_ microseconds: Int, count: Int = 1) {
        counts[microseconds, default: 0] += count
        self.count += count
    }

    package mutating func merge(_ other: LatencyHistogram) {
        for (microseconds, count) in other.counts { add(microseconds, count: count) }
    }

    /// The latency, in milliseconds, that `percent` % of the requests did not exceed (0 when empty).
    package func percentile(_ percent: Double) -> Double {
        guard count > 0 else { return 0 }
        let rank = max(1, Int((percent / 100 * Double(count)).rounded(.up)))
        var seen = 0
        for microseconds in counts.keys.sorted() {
            seen += counts[microseconds]!
            if seen >= rank { return Double(microseconds) / 1_000 }
        }
        return Double(counts.keys.max()!) / 1_000
    }
}
