import Foundation

/// A way from one point to another: over the roads, or, when either end is off the network, an
/// estimate (the great-circle distance × 1.3 at 30 km/h).
package struct Route: Sendable, Equatable {
    package enum Kind: String, Sendable, Codable {
        case road, estimate
    }

    package var kind: Kind
    /// The way as driven: for a road route the nodes' positions (the first and last are the
    /// snapped ends); for an estimate the two points.
    package var points: [Coordinate]
    /// Each segment's speed (`points.count - 1` of them), metres per second.
    package var speeds: [Double]
    package var metres: Double
    package var seconds: Double

    /// The segments' lengths, in metres.
    package var segmentMetres: [Double] {
        zip(points, points.dropFirst()).map { $0.metres(to: $1) }
    }

    /// One route after the other (through a pickup, say): one kind only if both are roads.
    package func followed(by next: Route) -> Route {
        // Routes that meet share their meeting point; others are joined by a straight segment.
        let meets = next.points.first == points.last
        return Route(
            kind: kind == .road && next.kind == .road ? .road : .estimate,
            points: points + (meets ? next.points.dropFirst() : next.points[...]),
            speeds: speeds + (meets ? [] : [Self.estimateSpeed]) + next.speeds,
            metres: metres + next.metres,
            seconds: seconds + next.seconds
        )
    }

    static let estimateSpeed = 30 / 3.6
    static let estimateDetour = 1.3

    static func estimate(from: Coordinate, to: Coordinate) -> Route {
        let metres = from.metres(to: to) * estimateDetour
        return Route(kind: .estimate, points: [from, to], speeds: [estimateSpeed], metres: metres, seconds: metres / estimateSpeed)
    }
}

extension RoadGraph {
    /// A point farther than this from every routable node is off the network.
    package static let snapLimitMetres = 250.0

    /// The fastest way by road from `from` to `to`, each snapped to its nearest routable node; an
    /// estimate when either is farther than `snapLimitMetres` from the network. A road route's
    /// time is the sum of its edges' (length at speed limit); the snapping legs are not driven.
    package func route(from: Coordinate, to: Coordinate) -> Route {
        let start = nearestRoutableNode(to: from)
        let end = nearestRoutableNode(to: to)
        guard start.metres <= Self.snapLimitMetres, end.metres <= Self.snapLimitMetres,
            let path = fastestPath(from: start.node, to: end.node)
        else { return .estimate(from: from, to: to) }
        return path
    }

    /// A* by time between two nodes, with the straight-line distance at the top speed as its
    /// bound; `nil` when `target` cannot be reached from `source`.
    package func fastestPath(from source: Int, to target: Int) -> Route? {
        if source == target {
            return Route(kind: .road, points: [nodes[source]], speeds: [], metres: 0, seconds: 0)
        }
        let goal = nodes[target]
        var best = [Double](repeating: .infinity, count: nodes.count)
        var cameBy = [Int](repeating: -1, count: nodes.count)  // index into `outgoing`
        var done = [Bool](repeating: false, count: nodes.count)
        var open = MinimumHeap()
        best[source] = 0
        open.push(nodes[source].metres(to: goal) / topSpeedMps, source)
        while let (_, node) = open.pop() {
            if node == target { break }
            if done[node] { continue }
            done[node] = true
            for index in offsets[node]..<offsets[node + 1] {
                let edge = outgoing[index]
                let time = best[node] + edge.seconds
                if time < best[edge.to] {
                    best[edge.to] = time
                    cameBy[edge.to] = index
                    open.push(time + nodes[edge.to].metres(to: goal) / topSpeedMps, edge.to)
                }
            }
        }
        guard best[target].isFinite else { return nil }
        var used: [Edge] = []
        var node = target
        while node != source {
            let edge = outgoing[cameBy[node]]
            used.append(edge)
            node = edge.from
        }
        used.reverse()
        return Route(
            kind: .road,
            points: [nodes[source]] + used.map { nodes[$0.to] },
            speeds: used.map(\.speedMps),
            metres: used.reduce(0) { $0 + $1.metres },
            seconds: used.reduce(0) { $0 + $1.seconds }
        )
    }
}

/// A binary min-heap of (priority, node) pairs for A*; stale entries are skipped by the caller.
struct MinimumHeap {
    private var items: [(priority: Double, node: Int)] = []

    mutating func push(_ priority: Double, _ node: Int) {
        items.append((priority, node))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].priority < items[parent].priority else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (priority: Double, node: Int)? {
        guard let first = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < items.count, items[left].priority < items[smallest].priority { smallest = left }
                if right < items.count, items[right].priority < items[smallest].priority { smallest = right }
                if smallest == parent { break }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}
