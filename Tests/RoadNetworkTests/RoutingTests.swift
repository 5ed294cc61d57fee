import Foundation
import RoadNetwork
import Testing

@Suite("Routing over the Helsinki road graph") struct RoutingTests {
    static let graph = try! RoadGraph.helsinki()

    /// The fixture's edges as the file has them, read here independently of `RoadGraph`: the
    /// fastest time of each directed pair (a two-way road both ways).
    static let fileEdges: [Pair: Double] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Shared/RoadNetwork/Resources/helsinki-drive.json")
        let json = try! JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        var edges: [Pair: Double] = [:]
        for case let row as [Double] in json["edges"] as! [Any] {
            let (from, to, seconds) = (Int(row[0]), Int(row[1]), row[2] / (row[3] / 3.6))
            edges[Pair(from, to)] = min(edges[Pair(from, to)] ?? .infinity, seconds)
            if row[4] == 0 { edges[Pair(to, from)] = min(edges[Pair(to, from)] ?? .infinity, seconds) }
        }
        return edges
    }()

    struct Pair: Hashable {
        var from: Int, to: Int
        init(_ from: Int, _ to: Int) {
            self.from = from
            self.to = to
        }
    }

    func place(_ name: String) throws -> Coordinate {
        try #require(Self.graph.places.first { $0.name == name }).location
    }

    /// The nodes a road route passes, from its points.
    func nodes(of route: Route) throws -> [Int] {
        let index = Dictionary(Self.graph.nodes.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        return try route.points.map { try #require(index[$0]) }
    }

    @Test func theFixtureHasItsRoadsItsLargestStronglyConnectedPartAndItsPlaces() {
        #expect(Self.graph.nodes.count == 1_992)
        #expect(Self.graph.isRoutable.filter { $0 }.count == 1_771)
        #expect(Self.graph.places.count == 350)
        #expect(Self.graph.attribution.contains("OpenStreetMap contributors"))
    }

    @Test func aRouteFollowsOneWayStreetsAndItsTimeIsTheSumOfItsEdgesAtTheirSpeeds() throws {
        // Maya Bar & Grill and Graniittilinna: one-way streets make the two directions differ
        // (networkx's astar_path_length on the same graph: 151.3 s and 111.2 s).
        let maya = try place("Maya Bar & Grill")
        let graniittilinna = try place("Graniittilinna")
        let there = Self.graph.route(from: maya, to: graniittilinna)
        let back = Self.graph.route(from: graniittilinna, to: maya)
        #expect(there.kind == .road && back.kind == .road)
        #expect(abs(there.seconds - 151.3) < 0.1)
        #expect(abs(back.seconds - 111.2) < 0.1)
        for route in [there, back] {
            let path = try nodes(of: route)
            var sum = 0.0
            for (from, to) in zip(path, path.dropFirst()) {
                // Every step is an edge of the file in the direction driven.
                let seconds = try #require(Self.fileEdges[Pair(from, to)], "\(from) → \(to) is not a road in that direction")
                sum += seconds
            }
            #expect(abs(route.seconds - sum) < 1e-6)
            #expect(route.speeds.count == route.points.count - 1)
        }
        // The way there takes at least one street that cannot be driven back.
        let path = try nodes(of: there)
        #expect(zip(path, path.dropFirst()).contains { Self.fileEdges[Pair($1, $0)] == nil })
    }

    @Test func aStarFindsTheFastestRouteThatDijkstraDoes() throws {
        var random = SystemRandomNumberGenerator()
        let routable = Self.graph.routableNodes
        for _ in 0..<12 {
            let source = routable.randomElement(using: &random)!
            let target = routable.randomElement(using: &random)!
            let route = try #require(Self.graph.fastestPath(from: source, to: target))
            #expect(abs(route.seconds - dijkstra(from: source, to: target)) < 1e-6, "\(source) → \(target)")
        }
    }

    @Test func pointsSnapToTheRoutableNetworkAndFarOnesGetTheEstimate() throws {
        // Every place snaps to a node from which every other can be reached.
        for place in Self.graph.places.prefix(50) {
            let snapped = Self.graph.nearestRoutableNode(to: place.location)
            #expect(Self.graph.isRoutable[snapped.node])
        }
        // Tampere is off the map: great-circle distance × 1.3 at 30 km/h.
        let helsinki = try place("Maya Bar & Grill")
        let tampere = Coordinate(lat: 61.4978, lng: 23.7610)
        let estimate = Self.graph.route(from: helsinki, to: tampere)
        #expect(estimate.kind == .estimate)
        #expect(abs(estimate.metres - helsinki.metres(to: tampere) * 1.3) < 1e-6)
        #expect(abs(estimate.seconds - estimate.metres / (30 / 3.6)) < 1e-6)
        #expect(estimate.points == [helsinki, tampere])
    }

    @Test func theGridSnapsToTheNodeTheScanFinds() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            // Over the map and a little beyond it.
            let point = Coordinate(lat: Double.random(in: 60.160...60.185, using: &random), lng: Double.random(in: 24.930...24.960, using: &random))
            let snapped = Self.graph.nearestRoutableNode(to: point)
            let scanned = Self.graph.nearestByScan(to: point)
            #expect(abs(snapped.metres - Self.graph.nodes[scanned].metres(to: point)) < 1e-9, "\(point)")
        }
    }

    /// A car along its route: the time left falls as it drives (matched to the stretch it is on,
    /// not to a carriageway or a loop the route comes back to later), a point a little off the road
    /// or a little behind still matches, one far off does not.
    @Test func aFollowedRouteGivesTheTimeLeftFromWhereTheCarIs() throws {
        let route = Self.graph.route(from: try place("Maya Bar & Grill"), to: Coordinate(lat: 60.1694, lng: 24.9526))
        #expect(route.kind == .road && route.points.count > 10)
        var follower = RouteFollower(route: route)
        #expect(abs((follower.secondsLeft(from: route.points[0]) ?? -1) - route.seconds) < 1e-6)
        var previous = route.seconds
        let segments = route.segmentMetres
        for index in 0..<segments.count {
            // Halfway along each segment, 10 m to its side.
            let a = route.points[index]
            let b = route.points[index + 1]
            let half = a.interpolated(to: b, fraction: 0.5)
            let scale = cos(half.lat * .pi / 180)
            let (east, north) = ((b.lng - a.lng) * scale, b.lat - a.lat)
            let norm = max((east * east + north * north).squareRoot(), 1e-12)
            let aside = Coordinate(lat: half.lat + east / norm * 10 / 111_195, lng: half.lng - north / norm * 10 / 111_195 / scale)
            let matched = follower.secondsLeft(from: aside)
            let left = try #require(matched, "segment \(index)")
            let expected =
                (index + 1..<segments.count).reduce(0.5 * segments[index] / route.speeds[index]) { $0 + segments[$1] / route.speeds[$1] }
                * route.seconds
                / zip(segments, route.speeds).reduce(0) { $0 + $1.0 / $1.1 }
            // Within the time of the 10 m aside (a point beside a bend is beside two stretches).
            #expect(
                abs(left - expected) < 3,
                "segment \(index) of \(segments.count) (\(segments[index]) m): \(left) s left, \(expected) expected, matched \(follower.segment)"
            )
            #expect(left <= previous + 3)
            previous = left
        }
        #expect(abs(follower.secondsLeft(from: route.points[route.points.count - 1]) ?? -1) < 1e-6)
        // GPS jitter: a point a little behind the last match is still on the route.
        var jittery = RouteFollower(route: route)
        _ = jittery.secondsLeft(from: route.points[5])
        #expect(jittery.secondsLeft(from: route.points[4].interpolated(to: route.points[5], fraction: 0.8)) != nil)
        // 300 m north of the end is off the route.
        let end = route.points[route.points.count - 1]
        #expect(follower.secondsLeft(from: Coordinate(lat: end.lat + 300 / 111_195, lng: end.lng)) == nil)
    }

    @Test func twoRoutesThatMeetJoinIntoOne() throws {
        let a = try place("Maya Bar & Grill")
        let b = try place("Graniittilinna")
        let c = try place("Cafe Java")
        let first = Self.graph.route(from: a, to: b)
        let second = Self.graph.route(from: b, to: c)
        let joined = first.followed(by: second)
        #expect(joined.kind == .road)
        #expect(joined.points.count == first.points.count + second.points.count - 1)
        #expect(joined.speeds.count == joined.points.count - 1)
        #expect(abs(joined.seconds - first.seconds - second.seconds) < 1e-9)
    }

    /// A plain Dijkstra over the file's edges (quadratic, for checking only).
    func dijkstra(from source: Int, to target: Int) -> Double {
        let count = Self.graph.nodes.count
        var adjacency = [[(Int, Double)]](repeating: [], count: count)
        for (pair, seconds) in Self.fileEdges { adjacency[pair.from].append((pair.to, seconds)) }
        var distance = [Double](repeating: .infinity, count: count)
        var done = [Bool](repeating: false, count: count)
        distance[source] = 0
        while true {
            var node = -1
            for candidate in 0..<count where !done[candidate] && distance[candidate].isFinite && (node < 0 || distance[candidate] < distance[node]) {
                node = candidate
            }
            if node < 0 { return .infinity }
            if node == target { return distance[node] }
            done[node] = true
            for (next, seconds) in adjacency[node] where distance[node] + seconds < distance[next] {
                distance[next] = distance[node] + seconds
            }
        }
    }
}
