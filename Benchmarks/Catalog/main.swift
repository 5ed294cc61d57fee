import AsyncHTTPClient
import Foundation
import LocalStack
import Logging
import ServiceKit
import TestSupport

// photo-catalog's figures (`make bench-catalog`):
//  1. a cached search with wrk: requests per second and latency percentiles, served by the catalog
//     directly and through the gateway, at a saturating and at a light load;
//  2. upstream calls saved: a replayed trace of N searches (default 10,000) in which 80 % go to
//     the 50 most popular queries and 20 % to a long tail, against a fresh cache — how many reached
//     Unsplash, and what share of the hourly budget (5,000 in production, 50 in demo mode) that is.
// The catalog and the gateway run as their own processes (release builds) against the test
// support's Postgres, a fake Unsplash (real HTTP, the spec's shapes) and the embedded broker the
// gateway needs; wrk and the replay share the same cores.
let seconds = BenchmarkArguments.integer("--seconds", default: 10)
let connections = BenchmarkArguments.integer("--connections", default: 32)
let lightConnections = BenchmarkArguments.integer("--light-connections", default: 4)
let traceLength = BenchmarkArguments.integer("--searches", default: 10_000)
let replayClients = BenchmarkArguments.integer("--replay-clients", default: 8)

func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

// MARK: The stack

let unsplash = FakeUnsplash()
try await unsplash.start()
unsplash.set(quota: 1_000_000, remaining: 1_000_000)
let database = try await TestPostgres.shared.makeDatabase()
let (_, databaseURL) = try await database.makeServiceRole(schema: "catalog", password: "bench")
let kafka = try await TestKafka.shared.running()
let unlimited = "100000000/1m"
let catalog = try await ServiceProcess(
    "photo-catalog",
    environment: [
        "DATABASE_URL": databaseURL, "DATABASE_POOL_SIZE": "16", "LOG_LEVEL": "error",
        "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false",
        "UNSPLASH_ACCESS_KEY": FakeUnsplash.accessKey, "UNSPLASH_API_URL": unsplash.baseURL,
        "CATALOG_JWKS_URL": "http://127.0.0.1:\(unsplash.port)/jwks.json",
    ]
)
let gateway = try await ServiceProcess(
    "gateway",
    environment: [
        "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms", "LOG_LEVEL": "error",
        "GATEWAY_AUTH_URL": unsplash.baseURL, "GATEWAY_JWKS_URL": "http://127.0.0.1:\(unsplash.port)/jwks.json",
        "GATEWAY_PHOTO_CATALOG_URL": catalog.baseURL, "GATEWAY_RATE_LIMIT_PHOTO_CATALOG": unlimited,
    ]
)

// MARK: 1. A cached search with wrk

let search = "/v1/search/photos?query=mountain%20lake&per_page=30"
let first = try await HTTPClient.shared.get(url: catalog.baseURL + search).get()
precondition(first.status.code == 200, "the warm-up search failed: \(first.status)")

// Signed in, the call's token is checked at the gateway's edge (the catalog's routes take an
// optional user): remembered after its first check, as an app sends one token for many calls.
let signedIn = ["Authorization: Bearer \(try testAccessToken(key: unsplash.key, issuer: "http://localhost:8080/auth/v1"))"]
let targets = [
    ("catalog directly", catalog.baseURL + search, [String]()),
    ("through gateway", gateway.baseURL + search, []),
    ("gateway, signed in", gateway.baseURL + search, signedIn),
]
var results: [String: Wrk.Result] = [:]
for load in [connections, lightConnections] {
    for (name, url, headers) in targets {
        _ = try await Wrk.run(url, seconds: 2, connections: load, headers: headers)  // warm-up: connections, pools
        let result = try await Wrk.run(url, seconds: seconds, connections: load, headers: headers)
        results["\(name) c\(load)"] = result
        print(
            "c\(load) \(name): \(format(result.requestsPerSecond, 0)) req/s, p50 \(format(result.p50)) ms, p90 \(format(result.p90)) ms, p99 \(format(result.p99)) ms\(result.errors.map { " — \($0)" } ?? "")"
        )
    }
}
let upstreamAfterWrk = unsplash.calls(to: "/search/photos")

// MARK: 2. Upstream calls saved on a realistic trace

// The same trace on every run.
var random = SeededRandom(state: 20_261_122)
let words = [
    "mountain", "lake", "forest", "city", "night", "beach", "coffee", "dog", "cat", "flower", "snow", "desert",
    "portrait", "food", "car", "street", "sky", "ocean", "autumn", "winter", "sunset", "bridge", "train", "book", "rain",
]
let popular = (0..<50).map { index in "\(words[index % words.count]) \(words[(index * 7 + 3) % words.count])" }
// Popular queries follow a Zipf-like curve (the first is asked most); spellings vary in case and
// spacing, as people type them; the long tail is mostly one-off queries.
let zipfWeights = (1...popular.count).map { 1.0 / Double($0) }
let zipfTotal = zipfWeights.reduce(0, +)
func popularQuery(_ random: inout SeededRandom) -> String {
    var pick = Double.random(in: 0..<zipfTotal, using: &random)
    for (index, weight) in zipfWeights.enumerated() {
        pick -= weight
        if pick < 0 { return popular[index] }
    }
    return popular[popular.count - 1]
}
var trace: [String] = []
for _ in 0..<traceLength {
    if Double.random(in: 0..<1, using: &random) < 0.8 {
        let query = popularQuery(&random)
        let spelled = Bool.random(using: &random) ? query.capitalized : " \(query) "
        trace.append(spelled)
    } else {
        trace.append("tail \(Int.random(in: 0..<50_000, using: &random))")
    }
}
let replayed = trace
let distinct = Set(trace.map { $0.lowercased().split(separator: " ").joined(separator: " ") }).count

unsplash.set(quota: 5_000, remaining: 5_000)
let before = unsplash.calls(to: "/search/photos")
let replayStarted = ContinuousClock.now
let failures = try await withThrowingTaskGroup(of: Int.self) { group in
    for client in 0..<replayClients {
        group.addTask {
            var failed = 0
            for index in stride(from: client, to: replayed.count, by: replayClients) {
                let query = replayed[index].addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let response = try await HTTPClient.shared.get(url: "\(catalog.baseURL)/v1/search/photos?query=\(query)").get()
                if response.status.code != 200 { failed += 1 }
            }
            return failed
        }
    }
    var failed = 0
    for try await count in group { failed += count }
    return failed
}
let replayTime = ContinuousClock.now - replayStarted
let upstreamCalls = unsplash.calls(to: "/search/photos") - before

// MARK: Report

let measured = results
func line(_ name: String, _ load: Int) -> String {
    let result = measured["\(name) c\(load)"]!
    return
        "  \(name.padding(toLength: 18, withPad: " ", startingAt: 0)) \(format(result.requestsPerSecond, 0).leftPadded(7)) req/s   p50 \(format(result.p50)) ms   p90 \(format(result.p90)) ms   p99 \(format(result.p99)) ms"
}
extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
print(
    """

    == photo-catalog: a cached search (\(search)) ==
    wrk -t2 -c\(connections) -d\(seconds)s (saturating: wrk, the catalog, the gateway and Postgres share 2 cores):
    \(line("catalog directly", connections))
    \(line("through gateway", connections))
    \(line("gateway, signed in", connections))
    wrk -t2 -c\(lightConnections) -d\(seconds)s (light load):
    \(line("catalog directly", lightConnections))
    \(line("through gateway", lightConnections))
    \(line("gateway, signed in", lightConnections))
    Upstream search calls during the wrk runs: \(upstreamAfterWrk) (the warm-up's one).

    == Upstream calls saved: a replayed trace of \(traceLength) searches ==
    80 % among the 50 most popular queries (Zipf-weighted, spelled in mixed case and spacing), 20 % a long tail;
    \(distinct) distinct questions; \(replayClients) concurrent clients; fresh cache; \(format(replayTime.milliseconds / 1_000, 1)) s.
      searches answered:      \(traceLength - failures) of \(traceLength) (\(failures) failed)
      upstream calls:         \(upstreamCalls) (\(format(Double(upstreamCalls) / Double(traceLength) * 100, 1)) % of searches)
      calls saved:            \(traceLength - upstreamCalls) (\(format(Double(traceLength - upstreamCalls) / Double(traceLength) * 100, 1)) %)
      budget consumed:        \(upstreamCalls) of a production hour's 5,000 (\(format(Double(upstreamCalls) / 50, 1)) %); without the proxy: \(traceLength), \(format(Double(traceLength) / 5_000, 1))× the hour's budget
    """
)

await gateway.stop()
await catalog.stop()
await unsplash.stop()
exit(0)
