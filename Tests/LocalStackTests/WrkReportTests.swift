import ServiceKit
import TestSupport
import Testing

/// How the benchmarks read wrk: its report with the histogram lines of our script, and
/// percentiles over several runs merged.
@Suite("wrk's report and merged latency histograms")
struct WrkReportTests {
    @Test func readsThroughputErrorsAndEveryLatency() {
        let result = Wrk.Result(
            report: """
                Running 2s test @ http://127.0.0.1:8080/auth/v1/user
                  2 threads and 32 connections
                  Thread Stats   Avg      Stdev     Max   +/- Stdev
                    Latency    18.03ms    3.10ms  59.50ms   80.00%
                  3480 requests in 2.00s, 1.20MB read
                  Non-2xx or 3xx responses: 3
                Requests/sec:   1740.12
                Transfer/sec:    612.40KB
                latency-us 812 2
                latency-us 1200 1
                latency-us 2010000 1
                """
        )
        #expect(result.requestsPerSecond == 1740.12)
        #expect(result.errors == "  Non-2xx or 3xx responses: 3")
        #expect(result.latency.count == 4)
        #expect(result.p50 == 0.812)
        #expect(result.p90 == 2010)
    }

    @Test func percentilesAreReadOverEveryRequestOfMergedRuns() {
        // One fast run and one with a slow spell: the merged p99 falls in the slow requests only if
        // more than 1 % of all requests were slow.
        var fast = LatencyHistogram()
        for microseconds in 1...990 { fast.add(10_000 + microseconds) }
        var slow = LatencyHistogram()
        slow.add(10_500, count: 5)
        slow.add(80_000, count: 5)
        var merged = fast
        merged.merge(slow)
        #expect(merged.count == 1_000)
        #expect(slow.percentile(99) == 80)
        #expect(merged.percentile(50) == 10.5)
        #expect(merged.percentile(99) == 10.985)
        #expect(merged.percentile(99.5) == 10.99)
        #expect(merged.percentile(99.6) == 80)
        #expect(merged.percentile(100) == 80)
        #expect(LatencyHistogram().percentile(99) == 0)
    }

    /// Slices of a made-up way: latencies around `base` µs with a spread that differs per slice.
    private func slices(count: Int, base: Int, shift: Int = 0, stallAt stall: Int? = nil) -> [LatencyHistogram] {
        (0..<count).map { index in
            var histogram = LatencyHistogram()
            for step in 0..<200 { histogram.add(base + shift + (step * (index + 3) * 37) % 5_000) }
            if index == stall { histogram.add(base + 250_000, count: 60) }
            return histogram
        }
    }

    @Test func aPercentileOverDrawnSlicesIsTheirMergedHistograms() {
        let histograms = slices(count: 6, base: 10_000)
        let sliced = SlicedLatencies(histograms)
        for indices in [[0, 1, 2, 3, 4, 5], [2], [5, 5, 1], [0, 0, 0, 3]] {
            var merged = LatencyHistogram()
            for index in indices { merged.merge(histograms[index]) }
            for percent in [1.0, 50, 90, 99, 100] {
                #expect(sliced.percentile(percent, of: indices) == merged.percentile(percent), "\(indices) p\(percent)")
            }
        }
        #expect(SlicedLatencies([LatencyHistogram()]).percentile(99, of: [0]) == 0)
    }

    @Test func theBootstrapDrawsRoundsSoAShiftSharedByEverySliceIsExact() {
        // Every proxied slice is its direct slice 1 ms later: whichever rounds are drawn, the
        // difference is 1 ms, if the two ways' slices are drawn together.
        var random = SeededRandom(state: 7)
        let (added, interval) = SlicedLatencies.addedPercentile(
            99,
            proxied: SlicedLatencies(slices(count: 30, base: 20_000, shift: 1_000)),
            direct: SlicedLatencies(slices(count: 30, base: 20_000)),
            using: &random
        )
        #expect(added == 1)
        #expect(interval == 1...1)
    }

    @Test func oneSlowSliceWidensTheIntervalDownToNothingAdded() {
        // One proxied slice met a 250 ms stall: over all slices the p99 is the stall's, but draws
        // without that round (about a third of them) show nothing added.
        var random = SeededRandom(state: 11)
        let (added, interval) = SlicedLatencies.addedPercentile(
            99,
            proxied: SlicedLatencies(slices(count: 20, base: 20_000, stallAt: 4)),
            direct: SlicedLatencies(slices(count: 20, base: 20_000)),
            using: &random
        )
        #expect(added > 200)
        #expect(interval.lowerBound == 0)
        #expect(interval.upperBound > 200)
    }
}
