import Contracts
import Foundation
import Testing

@testable import Tracking

/// A driver's pace, from their progress along their route (no sockets).
@Suite("Driving pace") struct DrivingPaceTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// Notes a leg: every `every` seconds from `from`, the road time left falling by `rate` per second.
    func drive(
        _ pace: inout DrivingPace,
        leg: OrderStatus = .enrouteToDropoff,
        from: TimeInterval,
        seconds: Int,
        every: TimeInterval = 1,
        rate: Double,
        leftAtStart: Double,
        stretch: Int = 1
    ) {
        for step in 0...Int(Double(seconds) / every) {
            let t = Double(step) * every
            pace.note(at: start.addingTimeInterval(from + t), stretch: stretch, status: leg, roadSecondsLeft: leftAtStart - rate * t)
        }
    }

    @Test func thePaceIsTheRoadTimeCoveredPerSecondOnceEnoughIsCovered() {
        var pace = DrivingPace()
        // Twice the limits: 8 s of driving cover 16 s of road, not yet enough to trust.
        drive(&pace, from: 0, seconds: 8, rate: 2, leftAtStart: 300)
        #expect(pace.pace(at: start.addingTimeInterval(8)) == 1)
        drive(&pace, from: 9, seconds: 6, rate: 2, leftAtStart: 282)
        #expect(abs(pace.pace(at: start.addingTimeInterval(15)) - 2) < 1e-9)
        // A simulated driver thirty times faster, reporting five times a second.
        var fast = DrivingPace()
        drive(&fast, from: 0, seconds: 2, every: 0.2, rate: 30, leftAtStart: 600)
        #expect(abs(fast.pace(at: start.addingTimeInterval(2)) - 30) < 1e-6)
    }

    @Test func waitsAreNotDrivingAndAWrongTurnSlowsThePace() {
        var pace = DrivingPace()
        drive(&pace, leg: .enrouteToPickup, from: 0, seconds: 20, rate: 1.5, leftAtStart: 400)
        // Twenty seconds at the restaurant (not noted: the order is arrived_at_pickup, then
        // picked_up), then the drive to the door, along a route of its own.
        pace.note(at: start.addingTimeInterval(25), stretch: 1, status: .arrivedAtPickup, roadSecondsLeft: 370)
        drive(&pace, from: 40, seconds: 10, rate: 1.5, leftAtStart: 370, stretch: 2)
        #expect(abs(pace.pace(at: start.addingTimeInterval(50)) - 1.5) < 1e-9)
        // A wrong turn: for 10 s the road time left grows by 1 s per second.
        drive(&pace, from: 51, seconds: 10, rate: -1, leftAtStart: 355, stretch: 2)
        #expect(pace.pace(at: start.addingTimeInterval(61)) < 1.5)
    }

    @Test func aNewOrderStartsWithTheLastTrustedPaceForTenMinutes() {
        var pace = DrivingPace()
        drive(&pace, from: 0, seconds: 30, rate: 3, leftAtStart: 500)
        // The next order, two minutes later: nothing measured on it yet.
        pace.note(at: start.addingTimeInterval(150), stretch: 2, status: .enrouteToPickup, roadSecondsLeft: 200)
        #expect(abs(pace.pace(at: start.addingTimeInterval(150)) - 3) < 1e-9)
        #expect(pace.pace(at: start.addingTimeInterval(30 + 601)) == 1)
        #expect(!pace.isStale(at: start.addingTimeInterval(150 + 600)) && pace.isStale(at: start.addingTimeInterval(150 + 601)))
    }

    @Test func thePaceStaysWithinItsBounds() {
        var crawling = DrivingPace()
        var teleporting = DrivingPace()
        drive(&crawling, from: 0, seconds: 60, rate: 0.1, leftAtStart: 500)
        #expect(crawling.pace(at: start.addingTimeInterval(60)) == 1, "6 s of road in a minute is not enough to judge")
        drive(&teleporting, from: 0, seconds: 5, rate: 1_000, leftAtStart: 10_000)
        #expect(teleporting.pace(at: start.addingTimeInterval(5)) == 100)
    }
}
