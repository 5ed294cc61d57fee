import Testing
import TestSupport

/// How the benchmarks read wrk: its report with the histogram lines of our script, and
/// percentiles over several runs merged.
@Suite("wrk's report and merged latency histograms")
struct WrkReportTests {
    @Test func readsThroughputErrorsAndEveryLatency() {
        let result = Wrk.Result(report: """
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
            """)
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
}
