import Contracts
import Foundation

/// How fast one driver gets on compared with the roads' speed limits, read from their progress
/// along their own route: each time they report while driving a leg (`enroute_to_pickup`,
/// `enroute_to_dropoff`), the road time left to the dropoff at the limits is noted; over the last
/// minute, the road time they covered per second is their pace (2 when they do in 30 s what the
/// limits allow in 60).
///
/// Progress along the route rather than distance between points: it needs no guess of which road
/// a point is on (a car near a junction), does not cut corners, counts red lights and traffic as
/// the trip will meet them, and a wrong turn (the road time left grows) slows the pace as it
/// slows the trip. Waits at the restaurant or the door are not driving: nothing is noted while
/// the order is in another status, and a pair of notes is weighed only along one route (`stretch`:
/// a new number for each route the driver is given or routed anew on) and within 10 s of each
/// other.
struct DrivingPace: Sendable {
    /// One note: when, along which route, and the road time left then.
    struct Note: Sendable, Equatable {
        var at: Date
        var stretch: Int
        var roadSecondsLeft: Double
    }

    /// How much road time must have been covered (at the limits) before the pace is trusted.
    static let enoughProgress: TimeInterval = 20
    /// How long the last trusted pace stands in when the recent notes are too few (a new order).
    static let remembered: TimeInterval = 600
    /// The window of notes weighed.
    static let window: TimeInterval = 60
    static let bounds: ClosedRange<Double> = 0.2...100
    /// At most this many notes are kept (a phone reporting five times a second fills the window
    /// with 300).
    static let capacity = 120

    private(set) var notes: [Note] = []
    private var trusted: (pace: Double, at: Date)?

    /// The legs during which a driver is driving.
    static let driving: Set<OrderStatus> = [.enrouteToPickup, .enrouteToDropoff]

    /// Notes the road time left at `at`, while the driver is driving a leg; older notes leave the
    /// window.
    mutating func note(at: Date, stretch: Int, status: OrderStatus, roadSecondsLeft: Double) {
        guard Self.driving.contains(status), roadSecondsLeft.isFinite else { return }
        let note = Note(at: at, stretch: stretch, roadSecondsLeft: roadSecondsLeft)
        if let last = notes.last, last.at > at {
            notes.insert(note, at: notes.firstIndex { $0.at > at } ?? notes.endIndex)
        } else {
            notes.append(note)
        }
        let newest = notes.last?.at ?? note.at
        notes.removeAll { newest.timeIntervalSince($0.at) > Self.window }
        if notes.count > Self.capacity { notes.removeFirst(notes.count - Self.capacity) }
        if let pace = measured { trusted = (pace, newest) }
    }

    /// The pace over the window, when it covered enough road; else the last trusted one (for up
    /// to 10 minutes), else 1 (the limits).
    func pace(at now: Date) -> Double {
        if let measured { return measured }
        if let trusted, now.timeIntervalSince(trusted.at) <= Self.remembered { return trusted.pace }
        return 1
    }

    /// Whether the notes are old enough to forget, `now`.
    func isStale(at now: Date) -> Bool {
        now.timeIntervalSince(max(notes.last?.at ?? .distantPast, trusted?.at ?? .distantPast)) > Self.remembered
    }

    /// The road time covered over the time it took, pairs of notes that leap ahead (a point
    /// matched a little too far along, a phone's jump) left out: more than three times the
    /// median pair's pace. Slow pairs (a red light, traffic) stay: the trip will meet them too.
    private var measured: Double? {
        var pairs: [(covered: Double, seconds: Double)] = []
        for (a, b) in zip(notes, notes.dropFirst()) where a.stretch == b.stretch {
            let seconds = b.at.timeIntervalSince(a.at)
            guard seconds > 0, seconds <= 10 else { continue }
            pairs.append((a.roadSecondsLeft - b.roadSecondsLeft, seconds))
        }
        guard !pairs.isEmpty else { return nil }
        let rates = pairs.map { $0.covered / $0.seconds }.sorted()
        let leap = 3 * max(rates[rates.count / 2], 0)
        var covered = 0.0
        var elapsed = 0.0
        for pair in pairs where pair.covered / pair.seconds <= leap || leap == 0 {
            covered += pair.covered
            elapsed += pair.seconds
        }
        guard covered >= Self.enoughProgress, elapsed > 0 else { return nil }
        return min(Self.bounds.upperBound, max(Self.bounds.lowerBound, covered / elapsed))
    }
}
