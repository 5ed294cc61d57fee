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
    /// - Parameter requests: Lua defining wrk's `setup`, `init` or `request` (which requests to
    ///   make), run with the script that reads every latency back.
    package static func run(_ url: String, seconds: Int, connections: Int, headers: [String] = [], requests: String? = nil) async throws -> Result {
        var script = try histogramScript.get()
        if let requests {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("wrk-requests-\(getpid())-\(UUID().uuidString.prefix(8)).lua")
            try (requests + "\n" + String(contentsOfFile: script, encoding: .utf8)).write(to: url, atomically: true, encoding: .utf8)
            script = url.path
        }
        let output = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/wrk"),
            ["-t\(min(2, connections))", "-c\(connections)", "-d\(seconds)s", "-s", script] + headers.flatMap { ["-H", $0] } + [url]
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
    fileprivate var counts: [Int: Int] = [:]
    package private(set) var count = 0

    package init() {}

    /// Which request, counted from the fastest (1 is the first), a percentile of `count` is.
    fileprivate static func rank(_ percent: Double, of count: Int) -> Int {
        max(1, Int((percent / 100 * Double(count)).rounded(.up)))
    }

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
        let rank = Self.rank(percent, of: count)
        var seen = 0
        for microseconds in counts.keys.sorted() {
            seen += counts[microseconds]!
            if seen >= rank { return Double(microseconds) / 1_000 }
        }
        return Double(counts.keys.max()!) / 1_000
    }
}

/// The latency histograms of a way's slices, kept apart: a percentile can be read over any draw of
/// them (a slice may be drawn more than once) without merging, as the bootstrap needs.
package struct SlicedLatencies: Sendable {
    /// Each slice's distinct latencies in microseconds, ascending, and how many of its requests took
    /// at most each.
    private let slices: [(microseconds: [Int], atMost: [Int])]

    package init(_ histograms: [LatencyHistogram]) {
        slices = histograms.map { histogram in
            let sorted = histogram.counts.sorted { $0.key < $1.key }
            var total = 0
            return (
                sorted.map(\.key),
                sorted.map {
                    total += $0.value
                    return total
                }
            )
        }
    }

    package var count: Int { slices.count }

    /// The latency, in milliseconds, that `percent` % of the requests of the slices at `indices`
    /// (repeats counted each time) did not exceed; 0 when they hold no request. The same as the
    /// percentile of those slices' histograms merged.
    package func percentile(_ percent: Double, of indices: [Int]) -> Double {
        let total = indices.reduce(0) { $0 + (slices[$1].atMost.last ?? 0) }
        guard total > 0 else { return 0 }
        let rank = LatencyHistogram.rank(percent, of: total)
        // The least latency that at least `rank` requests did not exceed: always one that occurred.
        var low = 0
        var high = indices.map { slices[$0].microseconds.last ?? 0 }.max()!
        while low < high {
            let middle = low + (high - low) / 2
            if indices.reduce(0, { $0 + atMost(middle, in: $1) }) >= rank { high = middle } else { low = middle + 1 }
        }
        return Double(low) / 1_000
    }

    /// How many requests of slice `index` took at most `microseconds`.
    private func atMost(_ microseconds: Int, in index: Int) -> Int {
        let slice = slices[index]
        var low = 0
        var high = slice.microseconds.count  // the first latency above `microseconds`
        while low < high {
            let middle = (low + high) / 2
            if slice.microseconds[middle] <= microseconds { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? 0 : slice.atMost[low - 1]
    }

    /// How much higher the `percent` percentile of `proxied` is than that of `direct`, over all their
    /// slices, with an interval for it at `confidence` by the percentile bootstrap: rounds are drawn
    /// with replacement, a round being the slices of the same index of both ways (they ran in turn,
    /// so a slow spell of the machine falls on both).
    /// - Returns: the difference over all the slices and the interval, in milliseconds.
    package static func addedPercentile(
        _ percent: Double,
        proxied: SlicedLatencies,
        direct: SlicedLatencies,
        confidence: Double = 0.95,
        resamples: Int = 2_000,
        using generator: inout some RandomNumberGenerator
    ) -> (added: Double, interval: ClosedRange<Double>) {
        let rounds = min(proxied.count, direct.count)
        precondition(rounds > 0 && resamples > 0, "no slices to compare")
        let all = Array(0..<rounds)
        let added = proxied.percentile(percent, of: all) - direct.percentile(percent, of: all)
        let drawn = (0..<resamples).map { _ in
            let indices = all.map { _ in Int.random(in: 0..<rounds, using: &generator) }
            return proxied.percentile(percent, of: indices) - direct.percentile(percent, of: indices)
        }.sorted()
        let tail = (1 - confidence) / 2
        let lower = drawn[Int((tail * Double(resamples - 1)).rounded())]
        let upper = drawn[Int(((1 - tail) * Double(resamples - 1)).rounded())]
        return (added, lower...upper)
    }
}
