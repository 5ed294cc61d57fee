import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import Gateway

@Suite("Upstream connections parked between exchanges") struct ParkingLotTests {
    /// A parked connection as the lot sees it: on a loop, open until closed or broken.
    final class Connection: PooledConnection {
        let channel: any Channel
        let name: String
        private let closed = Atomic<Bool>(false)
        private let broken = Atomic<Bool>(false)

        init(_ name: String, on loop: EmbeddedEventLoop) {
            self.name = name
            self.channel = EmbeddedChannel(loop: loop)
        }

        var isOpen: Bool { !closed.load(ordering: .relaxed) && !broken.load(ordering: .relaxed) }
        var wasClosed: Bool { closed.load(ordering: .relaxed) }
        func close() { closed.store(true, ordering: .relaxed) }
        func breakWhileParked() { broken.store(true, ordering: .relaxed) }
    }

    let start = ContinuousClock.now
    let loops = (EmbeddedEventLoop(), EmbeddedEventLoop())

    @Test func theMostRecentlyParkedConnectionOfTheCallersLoopIsTakenFirst() {
        let lot = ParkingLot<Connection>(idleTimeout: .seconds(30), maxIdlePerLoop: 8)
        let (first, second, other) = (Connection("first", on: loops.0), Connection("second", on: loops.0), Connection("other", on: loops.1))
        lot.park(first, now: start)
        lot.park(other, now: start)
        lot.park(second, now: start + .seconds(1))

        #expect(lot.take(on: loops.0, now: start + .seconds(2))?.name == "second")
        #expect(lot.take(on: loops.0, now: start + .seconds(2))?.name == "first")
        #expect(lot.take(on: loops.0, now: start + .seconds(2)) == nil)
        #expect(lot.take(on: loops.1, now: start + .seconds(2))?.name == "other")
        #expect(![first, second, other].contains { $0.wasClosed })
    }

    @Test func aConnectionThatBrokeWhileParkedIsPassedOver() {
        let lot = ParkingLot<Connection>(idleTimeout: .seconds(30), maxIdlePerLoop: 8)
        let (sound, broken) = (Connection("sound", on: loops.0), Connection("broken", on: loops.0))
        lot.park(sound, now: start)
        lot.park(broken, now: start)
        broken.breakWhileParked()

        #expect(lot.take(on: loops.0, now: start)?.name == "sound")
        #expect(lot.take(on: loops.0, now: start) == nil)
    }

    @Test func theLongestParkedAreClosedBeyondTheLoopsLimit() {
        let lot = ParkingLot<Connection>(idleTimeout: .seconds(30), maxIdlePerLoop: 2)
        let connections = (0..<4).map { Connection("\($0)", on: loops.0) }
        for (index, connection) in connections.enumerated() { lot.park(connection, now: start + .milliseconds(index)) }

        #expect(connections.map(\.wasClosed) == [true, true, false, false])
        #expect(lot.take(on: loops.0, now: start + .seconds(1))?.name == "3")
        #expect(lot.take(on: loops.0, now: start + .seconds(1))?.name == "2")
        #expect(lot.take(on: loops.0, now: start + .seconds(1)) == nil)
    }

    @Test func connectionsIdleTooLongAreClosedWhenMetOrWhenOthersAreParked() {
        let lot = ParkingLot<Connection>(idleTimeout: .seconds(30), maxIdlePerLoop: 8)
        let (old, older, fresh) = (Connection("old", on: loops.0), Connection("older", on: loops.0), Connection("fresh", on: loops.1))
        lot.park(older, now: start)
        lot.park(old, now: start + .seconds(5))
        lot.park(fresh, now: start + .seconds(40))

        // Taking meets `old` first, expired, and closes it with everything below it.
        #expect(lot.take(on: loops.0, now: start + .seconds(36)) == nil)
        #expect(old.wasClosed && older.wasClosed)
        #expect(!fresh.wasClosed)

        // Parking closes the expired ones at the bottom of its loop's stack.
        let (stale, newest) = (Connection("stale", on: loops.1), Connection("newest", on: loops.1))
        lot.park(stale, now: start + .seconds(41))
        lot.park(newest, now: start + .seconds(75))
        #expect(fresh.wasClosed && stale.wasClosed)
        #expect(lot.take(on: loops.1, now: start + .seconds(75))?.name == "newest")
    }
}
