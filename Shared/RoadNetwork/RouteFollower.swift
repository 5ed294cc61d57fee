import Foundation

/// A car's progress along the route it was given: each point it reports is matched to the
/// nearest stretch of the route ahead of where it was last seen, and the road time left is read
/// from there — no snapping to whichever node happens to be nearest (one on a parallel one-way
/// street, or just past a junction), so the time left falls smoothly as the car drives, and no
/// route is searched per point.
///
/// A point farther than `toleranceMetres` from the route ahead is off it: `secondsLeft` says so
/// (nil), and the caller routes again from there.
package struct RouteFollower: Sendable {
    package let route: Route
    /// The road time from each point of the route to its end, at the segments' speeds.
    private let secondsFromPoint: [Double]
    private let segmentMetres: [Double]
    /// The distance along the route to each point.
    private let metresToPoint: [Double]
    /// The segment the car was last matched to, and how far along the route that was.
    package private(set) var segment = 0
    private var along = 0.0

    /// How far from the route a reported point may be and still be on it: a phone's error, and the
    /// snapping legs at the route's ends.
    package static let toleranceMetres = 40.0
    /// How many segments ahead of the last match a point is looked for (a few hundred metres: a
    /// report every few seconds, or a fast simulated driver's).
    static let lookAhead = 150
    /// And behind (a point a little behind the last, from GPS jitter).
    static let lookBehind = 2
    /// What a metre along the route from the last match costs, against a metre off the route:
    /// a car is where it was plus what it drove since, so of two stretches near the point (a
    /// road's two carriageways, a loop around a block) the one just ahead is taken, not one the
    /// route comes back to later.
    static let aheadCost = 0.2, behindCost = 1.0

    package init(route: Route) {
        self.route = route
        segmentMetres = route.segmentMetres
        var metres = [Double](repeating: 0, count: route.points.count)
        for index in segmentMetres.indices { metres[index + 1] = metres[index] + segmentMetres[index] }
        metresToPoint = metres
        var seconds = [Double](repeating: 0, count: route.points.count)
        for index in stride(from: route.points.count - 2, through: 0, by: -1) {
            seconds[index] = seconds[index + 1] + segmentMetres[index] / route.speeds[index]
        }
        // Scaled to the route's own time (its edges' lengths; an estimate's detour factor).
        if let total = seconds.first, total > 0 {
            let scale = route.seconds / total
            seconds = seconds.map { $0 * scale }
        }
        secondsFromPoint = seconds
    }

    /// The road time left from `point`, matched to the route ahead of the last match; nil when
    /// the point is off the route.
    package mutating func secondsLeft(from point: Coordinate) -> Double? {
        guard route.points.count > 1 else {
            return route.points.first.map { $0.metres(to: point) <= Self.toleranceMetres ? 0 : nil } ?? nil
        }
        let scale = cos(point.lat * .pi / 180)
        let metresPerDegree = 111_195.0
        let first = max(0, segment - Self.lookBehind)
        let last = min(segmentMetres.count - 1, segment + Self.lookAhead)
        var best: (index: Int, fraction: Double, cost: Double)?
        for index in first...last {
            let a = route.points[index]
            let b = route.points[index + 1]
            let dx = (b.lng - a.lng) * scale
            let dy = b.lat - a.lat
            let px = (point.lng - a.lng) * scale
            let py = point.lat - a.lat
            let length = dx * dx + dy * dy
            let t = length > 0 ? min(1, max(0, (px * dx + py * dy) / length)) : 0
            let ex = px - t * dx
            let ey = py - t * dy
            let off = (ex * ex + ey * ey).squareRoot() * metresPerDegree
            guard off <= Self.toleranceMetres else { continue }
            let moved = metresToPoint[index] + t * segmentMetres[index] - along
            let cost = off + (moved >= 0 ? Self.aheadCost * moved : Self.behindCost * -moved)
            if cost < best?.cost ?? .infinity { best = (index, t, cost) }
        }
        guard let best else { return nil }
        segment = best.index
        along = metresToPoint[best.index] + best.fraction * segmentMetres[best.index]
        let next = secondsFromPoint[best.index + 1]
        return next + (1 - best.fraction) * (secondsFromPoint[best.index] - next)
    }
}
