import Contracts
import EventBus
import Foundation
import Identity
import RealtimeWire
import Synchronization
import TestSupport
import Testing

@testable import Gateway

extension ClientQueue.Frame {
    /// The text of a text frame.
    var text: String? {
        if case .text(let text) = content { text } else { nil }
    }
}

/// The realtime pieces that need no sockets: client queues, audiences, rendering, the order
/// directory.
@Suite("Gateway realtime units") struct RealtimeUnitTests {
    func frame(_ text: String, key: String? = nil) -> ClientQueue.Frame {
        .init(eventID: text, text: text, supersedingKey: key, enqueuedAt: .now)
    }

    func drain(_ queue: ClientQueue) async -> [String] {
        queue.close()
        var texts: [String] = []
        while let frame = await queue.next() { texts.append(frame.text ?? "<bytes>") }
        return texts
    }

    @Test func aNewerPositionReplacesTheQueuedOneAndMovesBehindLaterEvents() async {
        let queue = ClientQueue(capacity: 8)
        #expect(queue.offer(frame("p1", key: "driver/order")) == .queued)
        #expect(queue.offer(frame("status")) == .queued)
        #expect(queue.offer(frame("p2", key: "driver/order")) == .queuedDroppingOlder)
        #expect(queue.offer(frame("other", key: "driver2/order")) == .queued)
        #expect(await drain(queue) == ["status", "p2", "other"])
    }

    @Test func aFullQueueDropsItsOldestPositionButNeverAStatusChange() async {
        let queue = ClientQueue(capacity: 3)
        #expect(queue.offer(frame("s1")) == .queued)
        #expect(queue.offer(frame("pa", key: "a")) == .queued)
        #expect(queue.offer(frame("s2")) == .queued)
        #expect(queue.offer(frame("s3")) == .queuedDroppingOlder)
        #expect(queue.offer(frame("pb", key: "b")) == .dropped)
        #expect(queue.offer(frame("s4")) == .overflowed)
        #expect(queue.ending == .overflowed)
        #expect(queue.offer(frame("s5")) == .closed)
        #expect(await queue.next() == nil)
    }

    @Test func aWaitingWriterGetsTheFrameAtOnceAndCloseWakesIt() async {
        let queue = ClientQueue(capacity: 2)
        async let first = queue.next()
        try? await Task.sleep(for: .milliseconds(50))
        #expect(queue.offer(frame("now")) == .queued)
        #expect(await first?.text == "now")
        async let none = queue.next()
        try? await Task.sleep(for: .milliseconds(50))
        queue.close()
        #expect(await none == nil)
        #expect(queue.ending == .closed)
    }

    @Test func aPollingWriterIsWokenByTheFirstFrameAfterEmptyAndByTheEnd() {
        let queue = ClientQueue(capacity: 2)
        let wakes = Mutex(0)
        queue.onReady { wakes.withLock { $0 += 1 } }
        guard case .empty = queue.poll() else {
            Issue.record("a new queue is empty")
            return
        }
        // Only the frame that finds the queue empty wakes the writer: it then polls until empty.
        #expect(queue.offer(frame("a")) == .queued)
        #expect(queue.offer(frame("b")) == .queued)
        #expect(wakes.withLock { $0 } == 1)
        guard case .frame(let first) = queue.poll(), case .frame(let second) = queue.poll(), case .empty = queue.poll() else {
            Issue.record("the frames come in order, then the queue is empty")
            return
        }
        #expect([first.text, second.text] == ["a", "b"])
        #expect(queue.offer(frame("c")) == .queued)
        #expect(wakes.withLock { $0 } == 2)
        // A full queue that overflows wakes the writer, which finds the ending once it polls.
        #expect(queue.offer(frame("d")) == .queued)
        #expect(queue.offer(frame("e")) == .overflowed)
        #expect(wakes.withLock { $0 } == 3)
        guard case .ended(.overflowed) = queue.poll() else {
            Issue.record("an overflowed queue has ended")
            return
        }
        queue.close()
        #expect(wakes.withLock { $0 } == 3)
    }

    @Test func eventsGoToTheChannelsOfThoseTheyConcern() throws {
        let (user, customer, restaurant, driver, order) = (UUID(), UUID(), UUID(), UUID(), UUID())
        func audience<Event: DomainEvent>(_ event: Event) throws -> Audience? {
            try Audience(try EventEnvelope(event, source: "/splash/test"))
        }
        let id = { (uuid: UUID) in uuid.uuidString.lowercased() }
        #expect(
            try audience(ProfileUpdated(userId: user, username: "x", avatarUrl: nil, changed: [.username], updatedAt: Date()))?.channels == [
                .profiles, .user(id(user)),
            ]
        )
        #expect(try audience(PhotoLiked(userId: user, photoId: "abc", likedAt: Date()))?.channels == [.user(id(user))])
        // Posts reach everyone's feed and their author; a private collection's changes only its owner.
        #expect(
            try audience(PostCreated(postId: UUID(), userId: user, photoKey: "unsplash:abc", caption: "", createdAt: Date()))?.channels == [
                .feed, .user(id(user)),
            ]
        )
        #expect(try audience(PostDeleted(postId: UUID(), userId: user, deletedAt: Date()))?.channels == [.feed, .user(id(user))])
        #expect(
            try audience(CollectionChanged(userId: user, collectionId: UUID(), change: .created, private: true, changedAt: Date()))?.channels == [
                .user(id(user))
            ]
        )
        let owner = UUID()
        let parties = OrderParties(customerId: customer, restaurantId: restaurant, restaurantOwnerId: owner, driverId: driver)
        let placed = try #require(
            try audience(
                OrderPlaced(
                    orderId: order,
                    parties: parties,
                    items: [],
                    totalCents: 100,
                    dropoff: .init(address: "", lat: 60, lng: 25),
                    etaSeconds: nil,
                    placedAt: Date()
                )
            )
        )
        // The restaurant is reached through its owner's account.
        #expect(placed.channels == [.order(id(order)), .user(id(customer)), .user(id(owner)), .user(id(driver))])
        // The v1 twins are not pushed.
        #expect(
            try audience(
                OrderPlaced(
                    orderId: order,
                    parties: parties,
                    items: [],
                    totalCents: 100,
                    dropoff: .init(address: "", lat: 60, lng: 25),
                    etaSeconds: nil,
                    placedAt: Date()
                ).v1
            ) == nil
        )
        #expect(placed.supersedingKey == nil)
        #expect(placed.order?.parties == parties)
        let moved = try #require(
            try audience(
                DriverLocationUpdated(
                    driverId: driver,
                    orderId: order,
                    latitude: 1,
                    longitude: 2,
                    heading: nil,
                    speedMps: nil,
                    accuracyM: nil,
                    etaSeconds: 60,
                    recordedAt: Date()
                )
            )
        )
        #expect(moved.channels == [.order(id(order))])
        #expect(moved.supersedingKey == "\(id(driver))/\(id(order))")
        #expect(
            try audience(
                DriverLocationUpdated(
                    driverId: driver,
                    orderId: nil,
                    latitude: 1,
                    longitude: 2,
                    heading: nil,
                    speedMps: nil,
                    accuracyM: nil,
                    etaSeconds: nil,
                    recordedAt: Date()
                )
            ) == nil
        )
        #expect(
            try audience(
                EditRequested(
                    editId: UUID(),
                    userId: user,
                    source: .upload(id: UUID()),
                    filters: [],
                    output: .init(format: .jpeg, longestEdge: 1080),
                    requestedAt: Date()
                )
            ) == nil
        )
    }

    @Test func anEventIsRenderedAsStructuredCloudEventsJSON() throws {
        let user = UUID()
        let envelope = try EventEnvelope(
            ProfileUpdated(userId: user, username: "ana", avatarUrl: "https://img.example/a.png", changed: [.avatarUrl], updatedAt: Date()),
            source: "/splash/auth"
        )
        let payload = EventPayload(envelope)
        let event = try PushEvent(payload, audience: try #require(try Audience(payload)))
        #expect(event.channels == [.profiles, .user(user.uuidString.lowercased())])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(event.text(for: .profiles).utf8)) as? [String: Any])
        #expect(Set(json.keys) == ["specversion", "id", "source", "type", "time", "subject", "datacontenttype", "channel", "data"])
        #expect(json["id"] as? String == envelope.id.uuidString.lowercased())
        #expect(json["datacontenttype"] as? String == "application/json")
        let data = try #require(json["data"] as? [String: Any])
        #expect(data["avatarUrl"] as? String == "https://img.example/a.png")
        #expect(data["changed"] as? [String] == ["avatarUrl"])
    }

    /// What the gateway wrote before it rendered frames itself: the payload read into a
    /// `JSONValue`, the whole encoded with sorted keys.
    private func encoderRendering(_ envelope: EventEnvelope, channel: RealtimeChannel) throws -> String {
        struct Structured: Encodable {
            let specversion, id, source, type, time: String
            let subject: String?
            let datacontenttype, channel: String
            let data: JSONValue
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let structured = Structured(
            specversion: "1.0",
            id: envelope.id.uuidString.lowercased(),
            source: envelope.source,
            type: envelope.type,
            time: EventJSON.formatTimestamp(envelope.time),
            subject: envelope.subject,
            datacontenttype: "application/json",
            channel: channel.description,
            data: try JSONDecoder().decode(JSONValue.self, from: Data(envelope.data))
        )
        return String(decoding: try encoder.encode(structured), as: UTF8.self)
    }

    @Test func everyEventsFrameIsByteForByteWhatTheEncoderWrote() throws {
        var examples = EventExamples()
        for type in EventCatalog.all {
            let envelope = try EventEnvelope(try examples.example(type), source: "/splash/test")
            let payload = EventPayload(envelope)
            let audience = try Audience(payload) ?? Audience.adminOnly(envelope)
            let event = try PushEvent(payload, audience: audience.addingAdmin())
            for channel in event.channels {
                #expect(event.text(for: channel) == (try encoderRendering(envelope, channel: channel)), "\(type.type) on \(channel)")
            }
        }
    }

    @Test func aPayloadNotReadAsItsTypeIsCheckedAndPutOnOneLine() throws {
        func envelope(_ data: String) -> EventEnvelope {
            EventEnvelope(id: UUID(), source: "/elsewhere", type: "elsewhere.thing.v1", time: Date(), subject: nil, key: "k", data: Array(data.utf8))
        }
        let spread = envelope("{\n  \"b\": [1, 2.5],\n  \"a\": \"x/y\"\n}")
        let event = try PushEvent(EventPayload(spread), audience: Audience.adminOnly(spread).addingAdmin())
        #expect(event.text(for: .admin) == (try encoderRendering(spread, channel: .admin)))
        #expect(!event.text(for: .admin).contains("\n"))
        let broken = envelope("{\"a\": ")
        #expect(throws: DecodingError.self) { try PushEvent(EventPayload(broken), audience: Audience.adminOnly(broken).addingAdmin()) }
    }

    @Test func channelNamesAreParsedAndMeIsTheViewersOwn() {
        #expect(RealtimeChannel(name: "profiles", user: "u") == .profiles)
        #expect(RealtimeChannel(name: "me", user: "u") == .user("u"))
        #expect(RealtimeChannel(name: "feed", user: "u") == .feed)
        #expect(RealtimeChannel(name: "admin", user: "u") == .admin)
        let order = UUID()
        #expect(RealtimeChannel(name: "orders:\(order.uuidString)", user: "u") == .order(order.uuidString.lowercased()))
        #expect(RealtimeChannel(name: "orders:42", user: "u") == nil)
        #expect(RealtimeChannel(name: "users", user: "u") == nil)
    }

    @Test func recentEventIDsTellARepeatAndForgetTheOldestPastCapacity() {
        let recent = RecentEventIDs(capacity: 3)
        let ids = (0..<5).map { _ in UUID() }
        #expect(recent.firstSighting(of: ids[0]))
        #expect(!recent.firstSighting(of: ids[0]))
        #expect(recent.firstSighting(of: ids[1]) && recent.firstSighting(of: ids[2]))
        // A fourth id pushes out the first; the others stay repeats, however often asked.
        #expect(recent.firstSighting(of: ids[3]))
        #expect(!recent.firstSighting(of: ids[1]) && !recent.firstSighting(of: ids[2]) && !recent.firstSighting(of: ids[3]))
        #expect(recent.firstSighting(of: ids[0]))
        // That one pushed out the second, and the ring wraps on.
        #expect(recent.firstSighting(of: ids[1]))
        #expect(recent.firstSighting(of: ids[4]))
        #expect(!recent.firstSighting(of: ids[0]) && !recent.firstSighting(of: ids[1]) && !recent.firstSighting(of: ids[4]))
        #expect(recent.firstSighting(of: ids[2]))
    }

    @Test func theOrderDirectoryAdmitsPartiesAndAdminsAndForgetsTheOldestPastCapacity() async {
        let directory = OrderDirectory(capacity: 2, lookupWait: .milliseconds(100))
        let (a, b, c) = (UUID(), UUID(), UUID())
        let restaurant = UUID()
        let parties = OrderParties(customerId: a, restaurantId: restaurant, restaurantOwnerId: b, driverId: nil)
        directory.record(order: "o1", parties: parties)
        #expect(await directory.mayFollow(order: "o1", user: a.uuidString.lowercased(), role: "customer"))
        #expect(await directory.mayFollow(order: "o1", user: b.uuidString.lowercased(), role: "restaurant"))
        // The restaurant's own id is not an account.
        #expect(await !directory.mayFollow(order: "o1", user: restaurant.uuidString.lowercased(), role: "restaurant"))
        #expect(await !directory.mayFollow(order: "o1", user: c.uuidString.lowercased(), role: "driver"))
        #expect(await directory.mayFollow(order: "unknown", user: c.uuidString.lowercased(), role: "admin"))
        directory.record(order: "o1", parties: OrderParties(customerId: a, restaurantId: restaurant, restaurantOwnerId: b, driverId: c))
        #expect(await directory.mayFollow(order: "o1", user: c.uuidString.lowercased(), role: "driver"))
        directory.record(order: "o2", parties: parties)
        directory.record(order: "o3", parties: parties)
        #expect(await !directory.mayFollow(order: "o1", user: a.uuidString.lowercased(), role: "customer"))
        #expect(await directory.mayFollow(order: "o3", user: a.uuidString.lowercased(), role: "customer"))
    }
}
