import Foundation
import RoadNetwork
import ServiceKit
import TestSupport

// Route computation on the Helsinki road graph (`make bench-routing`): tracking's router — a point
// snapped to the nearest routable node at each end, then A* by time — against networkx's
// astar_path with the same bound on the same graph (deploy/bench/networkx_routes.py), over the
// same pairs of the fixture's places (seeded), several rounds each, one core each in turn. The
// two must agree on every route's time; the figure is each search's latency.
let pairCount = BenchmarkArguments.integer("--pairs", default: 2_000)
let rounds = BenchmarkArguments.integer("--rounds", default: 5)
let seed = UInt64(BenchmarkArguments.integer("--seed", default: 24))

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
func percentile(_ sorted: [Double], _ percent: Double) -> Double {
    sorted[min(sorted.count - 1, max(0, Int((percent / 100 * Double(sorted.count)).rounded(.up)) - 1))]
}

let graph = try RoadGraph.helsinki()
var random = SeededRandom(state: seed)
let pairs = (0..<pairCount).map { _ in
    (graph.places.randomElement(using: &random)!.location, graph.places.randomElement(using: &random)!.location)
}

// Splash: snap and route, every pair, `rounds` times.
var ours: [Double] = []
var routes: [Route] = []
for round in 0..<rounds {
    for (from, to) in pairs {
        let start = ContinuousClock.now
        let route = graph.route(from: from, to: to)
        ours.append((ContinuousClock.now - start).seconds * 1_000_000)
        if round == 0 { routes.append(route) }
    }
}
ours.sort()

// networkx over the same snapped node pairs.
let nodePairs = pairs.map { [graph.nearestRoutableNode(to: $0.0).node, graph.nearestRoutableNode(to: $0.1).node] }
let pairsFile = FileManager.default.temporaryDirectory.appendingPathComponent("route-pairs-\(getpid()).json")
try JSONSerialization.data(withJSONObject: nodePairs).write(to: pairsFile)
defer { try? FileManager.default.removeItem(at: pairsFile) }
let graphFile = try RoadGraph.helsinkiFixture().path
let python = Process()
python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
python.arguments = ["python3", "deploy/bench/networkx_routes.py", "--graph", graphFile, "--pairs", pairsFile.path, "--rounds", "\(rounds)"]
let output = Pipe()
python.standardOutput = output
try python.run()
let data = output.fileHandleForReading.readDataToEndOfFile()
python.waitUntilExit()
guard python.terminationStatus == 0, let baseline = try JSONSerialization.jsonObject(with: data) as? [String: Any],
    let theirSeconds = baseline["seconds"] as? [Double], var theirs = baseline["microseconds"] as? [Double]
else { fatalError("networkx_routes.py failed (is networkx installed? make bench-routing installs it)") }
theirs.sort()

// The cross-check: the same fastest time for every pair.
let disagreements = zip(routes, theirSeconds).filter { abs($0.seconds - $1) > 1e-6 }.count

print(
    """
    == routing: \(pairCount) routes between the fixture's places (seed \(seed)), \(rounds) rounds, one core ==
    graph: \(graph.nodes.count) nodes, \(graph.edges.count) directed edges, \(graph.isRoutable.filter { $0 }.count) routable
    Splash (snap + A*)         p50 \(format(percentile(ours, 50))) µs   p99 \(format(percentile(ours, 99))) µs   max \(format(ours.last!)) µs
    networkx \(baseline["networkx"] ?? "?") astar_path    p50 \(format(percentile(theirs, 50))) µs   p99 \(format(percentile(theirs, 99))) µs   max \(format(theirs.last!)) µs
    p99 ratio (networkx / Splash): \(format(percentile(theirs, 99) / percentile(ours, 99), 1))×
    routes whose time differs from networkx's: \(disagreements) of \(pairCount)
    goal: p99 ≤ 2 ms
    """
)
if disagreements > 0 { exit(1) }
