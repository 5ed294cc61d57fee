import Foundation

/// A drivable road network: nodes, directed edges with their lengths and speed limits, and the
/// places (restaurants, cafés, fast food) of the area — read from the road fixture's JSON
/// (`Resources/SOURCE.md`: `{nodes: [[lat, lng]], edges: [[from, to, metres, kmh, oneway]],
/// restaurants: [{name, amenity, cuisine, lat, lng, osm_node}]}`).
///
/// Routes are found by time, with A*, between the nodes of the largest strongly connected part
/// (from any node of it every other can be reached); points are snapped to its nearest node.
package final class RoadGraph: Sendable {
    /// A place of the fixture.
    package struct Place: Sendable, Hashable, Decodable {
        package var name: String
        package var amenity: String
        package var cuisine: String?
        package var lat: Double
        package var lng: Double
        /// The OpenStreetMap node id: stable across extracts, so menus and ids derived from it are.
        package var osmNode: Int64

        package var location: Coordinate { Coordinate(lat: lat, lng: lng) }

        enum CodingKeys: String, CodingKey {
            case name, amenity, cuisine, lat, lng
            case osmNode = "osm_node"
        }
    }

    /// One directed edge as stored: from `start` of the adjacency row to `target`.
    package struct Edge: Sendable, Hashable {
        package var from: Int
        package var to: Int
        package var metres: Double
        package var speedMps: Double
        package var seconds: Double { metres / speedMps }
    }

    package struct FormatError: Error, CustomStringConvertible {
        package var description: String
    }

    package let nodes: [Coordinate]
    package let places: [Place]
    /// The attribution the data must carry wherever it is shown.
    package let attribution: String
    /// Outgoing edges of node `n`: `outgoing[offsets[n]..<offsets[n + 1]]`.
    let offsets: [Int]
    let outgoing: [Edge]
    /// Whether a node belongs to the largest strongly connected part.
    package let isRoutable: [Bool]
    /// The fastest speed of any edge: A*'s bound (time to go `d` metres is at least `d / topSpeed`).
    let topSpeedMps: Double
    /// The nodes of the largest strongly connected part.
    package let routableNodes: [Int]
    /// The routable nodes by grid cell, for snapping without looking at every node.
    private let cells: SnapGrid

    package init(json data: Data) throws {
        struct File: Decodable {
            var source: String
            var nodes: [[Double]]
            var edges: [[Double]]
            var restaurants: [Place]
        }
        let file = try JSONDecoder().decode(File.self, from: data)
        nodes = try file.nodes.map { pair in
            guard pair.count == 2, Coordinate(lat: pair[0], lng: pair[1]).isValid else {
                throw FormatError(description: "a node is not [lat, lng]: \(pair)")
            }
            return Coordinate(lat: pair[0], lng: pair[1])
        }
        var edges: [Edge] = []
        edges.reserveCapacity(file.edges.count * 2)
        for row in file.edges {
            guard row.count == 5, let from = Int(exactly: row[0]), let to = Int(exactly: row[1]),
                nodes.indices.contains(from), nodes.indices.contains(to), row[2] >= 0, row[3] > 0
            else { throw FormatError(description: "an edge is not [from, to, metres, kmh, oneway] over known nodes: \(row)") }
            let speed = row[3] / 3.6
            edges.append(Edge(from: from, to: to, metres: row[2], speedMps: speed))
            if row[4] == 0 { edges.append(Edge(from: to, to: from, metres: row[2], speedMps: speed)) }
        }
        edges.sort { ($0.from, $0.to) < ($1.from, $1.to) }
        var offsets = [Int](repeating: 0, count: nodes.count + 1)
        for edge in edges { offsets[edge.from + 1] += 1 }
        for index in 1..<offsets.count { offsets[index] += offsets[index - 1] }
        self.offsets = offsets
        outgoing = edges
        places = file.restaurants
        attribution = file.source
        topSpeedMps = edges.map(\.speedMps).max() ?? 1
        let routable = Self.largestStronglyConnectedPart(nodeCount: nodes.count, offsets: offsets, edges: edges)
        isRoutable = routable
        routableNodes = routable.indices.filter { routable[$0] }
        cells = SnapGrid(nodes: nodes, members: routableNodes)
    }

    /// The central Helsinki fixture shipped with this module (© OpenStreetMap contributors, ODbL).
    package static func helsinki() throws -> RoadGraph {
        try RoadGraph(json: Data(contentsOf: try helsinkiFixture()))
    }

    /// Where the Helsinki fixture's JSON is.
    package static func helsinkiFixture() throws -> URL {
        guard let url = Bundle.module.url(forResource: "helsinki-drive", withExtension: "json") else {
            throw FormatError(description: "helsinki-drive.json is missing from the RoadNetwork bundle")
        }
        return url
    }

    /// Every directed edge (a two-way road is two).
    package var edges: [Edge] { outgoing }

    package func edges(from node: Int) -> ArraySlice<Edge> {
        outgoing[offsets[node]..<offsets[node + 1]]
    }

    /// The routable node nearest to `point`, and how far it is (metres). Every route snaps its
    /// two ends, and every ETA is a route: the grid looks only at the cells around the point;
    /// a point off the map is compared with every node.
    package func nearestRoutableNode(to point: Coordinate) -> (node: Int, metres: Double) {
        let best = cells.nearest(to: point, in: nodes) ?? nearestByScan(to: point)
        return (best, nodes[best].metres(to: point))
    }

    /// The nearest routable node by looking at each (what the grid must agree with).
    package func nearestByScan(to point: Coordinate) -> Int {
        let scale = cos(point.lat * .pi / 180)
        var best = routableNodes[0]
        var bestSquare = Double.infinity
        for node in routableNodes {
            let square = SnapGrid.square(nodes[node], point, scale: scale)
            if square < bestSquare {
                bestSquare = square
                best = node
            }
        }
        return best
    }

    /// The speed limit (metres per second) of the fastest road leaving the routable node nearest
    /// to `point`: what a car there may be expected to do.
    package func speedLimit(near point: Coordinate) -> Double {
        edges(from: nearestRoutableNode(to: point).node).map(\.speedMps).max() ?? topSpeedMps
    }

    /// Kosaraju's algorithm, iteratively: the largest set of nodes each reachable from every other.
    private static func largestStronglyConnectedPart(nodeCount: Int, offsets: [Int], edges: [Edge]) -> [Bool] {
        // Finish order of a depth-first search over the edges.
        var visited = [Bool](repeating: false, count: nodeCount)
        var order: [Int] = []
        order.reserveCapacity(nodeCount)
        for start in 0..<nodeCount where !visited[start] {
            var stack: [(node: Int, next: Int)] = [(start, offsets[start])]
            visited[start] = true
            while let top = stack.last {
                if top.next < offsets[top.node + 1] {
                    stack[stack.count - 1].next += 1
                    let target = edges[top.next].to
                    if !visited[target] {
                        visited[target] = true
                        stack.append((target, offsets[target]))
                    }
                } else {
                    order.append(top.node)
                    stack.removeLast()
                }
            }
        }
        // Components of the reversed graph, in reverse finish order.
        var reversed = [[Int]](repeating: [], count: nodeCount)
        for edge in edges { reversed[edge.to].append(edge.from) }
        var component = [Int](repeating: -1, count: nodeCount)
        var sizes: [Int] = []
        for start in order.reversed() where component[start] < 0 {
            let id = sizes.count
            sizes.append(0)
            var stack = [start]
            component[start] = id
            while let node = stack.popLast() {
                sizes[id] += 1
                for source in reversed[node] where component[source] < 0 {
                    component[source] = id
                    stack.append(source)
                }
            }
        }
        guard let largest = sizes.indices.max(by: { sizes[$0] < sizes[$1] }) else { return [] }
        return component.map { $0 == largest }
    }
}

/// Nodes bucketed by cells of 0.001° of latitude by 0.002° of longitude (about 110 m square in
/// Helsinki). Distances are equirectangular: over a few kilometres they rank nodes as haversine
/// does.
struct SnapGrid: Sendable {
    static let cellLat = 0.001
    static let cellLng = 0.002
    let minLat: Double
    let minLng: Double
    let rows: Int
    let columns: Int
    let buckets: [[Int]]

    init(nodes: [Coordinate], members: [Int]) {
        minLat = members.map { nodes[$0].lat }.min() ?? 0
        minLng = members.map { nodes[$0].lng }.min() ?? 0
        rows = Int(((members.map { nodes[$0].lat }.max() ?? 0) - minLat) / Self.cellLat) + 1
        columns = Int(((members.map { nodes[$0].lng }.max() ?? 0) - minLng) / Self.cellLng) + 1
        var buckets = [[Int]](repeating: [], count: rows * columns)
        for node in members {
            let (row, column) = (Int((nodes[node].lat - minLat) / Self.cellLat), Int((nodes[node].lng - minLng) / Self.cellLng))
            buckets[row * columns + column].append(node)
        }
        self.buckets = buckets
    }

    static func square(_ node: Coordinate, _ point: Coordinate, scale: Double) -> Double {
        let dLat = node.lat - point.lat
        let dLng = (node.lng - point.lng) * scale
        return dLat * dLat + dLng * dLng
    }

    /// The nearest member to `point`, ring by ring around its cell until no farther ring can hold
    /// a nearer one; `nil` for a point outside the grid (the caller scans).
    func nearest(to point: Coordinate, in nodes: [Coordinate]) -> Int? {
        let row = Int(((point.lat - minLat) / Self.cellLat).rounded(.down))
        let column = Int(((point.lng - minLng) / Self.cellLng).rounded(.down))
        guard (0..<rows).contains(row), (0..<columns).contains(column) else { return nil }
        let scale = cos(point.lat * .pi / 180)
        // Whatever lies in ring k + 1 or beyond is at least k cell sides away.
        let side = min(Self.cellLat, Self.cellLng * scale)
        var best: Int?
        var bestSquare = Double.infinity
        for ring in 0...max(rows, columns) {
            for r in (row - ring)...(row + ring) where (0..<rows).contains(r) {
                let edgeRow = r == row - ring || r == row + ring
                for c in (column - ring)...(column + ring) where (0..<columns).contains(c) && (edgeRow || c == column - ring || c == column + ring) {
                    for node in buckets[r * columns + c] {
                        let square = Self.square(nodes[node], point, scale: scale)
                        if square < bestSquare {
                            bestSquare = square
                            best = node
                        }
                    }
                }
            }
            let reach = Double(ring) * side
            if best != nil, bestSquare <= reach * reach { break }
        }
        return best
    }
}
