import AsyncSignals
import Contracts
import EventBus
import Foundation
import Kafka
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Reads the public topics for realtime clients.
///
/// Every gateway replica reads in a consumer group of its own (`gateway-<host>-<random>`), so
/// each replica sees every event, from the latest offset (a client sees what happens while it is
/// connected; SSE's replay window covers a reconnect), and commits nothing. A second consumer
/// reads `tracking.orders` from its start into the `OrderDirectory`, so that subscriptions to
/// orders placed before this replica started are decided too.
struct EventFeed: Service {
    let events: EventBusSettings
    let replica: String
    let hub: RealtimeHub
    let changes: ChangeHub
    let broadcasts: BroadcastRelay
    let presence: PresenceRelay
    let orders: OrderDirectory
    let logger: Logger
    /// Completed once the live consumer holds every partition of the public topics.
    let live = OneShot<Void>()
    /// The types passed over so far (tracking's v1 twins, types newer than this gateway): each is
    /// logged the first time only.
    private let passedOver = TypesSeen()
    /// The events pushed lately: one delivered again (publishing is at-least-once) is not pushed
    /// twice, on either realtime protocol. Driver positions are not kept: they come without an
    /// outbox, and a repeated one changes nothing a client shows.
    private let pushed = RecentEventIDs(capacity: Self.rememberedEvents)

    /// How many events' ids a replica remembers to push each once, in a few MB. A relay
    /// publishes a row again on its next pass, seconds after the first, far inside them.
    static let rememberedEvents = 65_536

    /// `/readyz`: ready once this replica reads every public partition (before that, an event
    /// could pass unseen).
    var readiness: ReadinessCheck {
        ReadinessCheck("events") { [live] in
            guard live.isComplete else { throw FeedNotLive() }
        }
    }

    private struct FeedNotLive: Error, CustomStringConvertible {
        var description: String { "the event feed has not been assigned its partitions yet" }
    }

    func run() async throws {
        // librdkafka blocks its caller at times (a consumer's handle, destroyed when the feed
        // ends, joins its threads): never on an event loop, even when the gateway's other tasks
        // run there.
        try await withTaskExecutorPreference(globalConcurrentExecutor) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await consume(self.configuration(group: "gateway-\(replica)", topics: Self.liveTopics, startAt: .latest), push: true)
                }
                group.addTask {
                    try await consume(
                        self.configuration(group: "gateway-\(replica)-orders", topics: [TopicCatalog.trackingOrders], startAt: .earliest),
                        push: false
                    )
                }
                try await group.waitForAll()
            }
        }
    }

    private func configuration(group: String, topics: [Topic], startAt: KafkaConsumerConfiguration.StartPosition) -> KafkaConsumerConfiguration {
        var configuration = events.consumer(clientID: group, group: group, topics: topics)
        configuration.startAt = startAt
        configuration.commitsOffsets = false
        // Leaving must not hold the gateway's shutdown: nothing is committed.
        configuration.closeTimeout = .seconds(3)
        configuration.revocationDrainTimeout = .seconds(1)
        return configuration
    }

    private func consume(_ configuration: KafkaConsumerConfiguration, push: Bool) async throws {
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        let expected = Self.liveTopics.reduce(0) { $0 + $1.partitions }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await consumer.run() }
            var assigned = 0
            for await partition in consumer.partitions {
                assigned += 1
                if push, assigned >= expected { live.complete(()) }
                group.addTask {
                    var handled = 0
                    for await message in partition {
                        handle(message, push: push)
                        partition.markProcessed(message)
                        // A burst is buffered, so the loop would not suspend until it is all
                        // handled: let the executor's other tasks have a turn now and then.
                        handled += 1
                        if handled % 64 == 0 { await Task.yield() }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// What the live consumer reads: the public topics, and the replicas' Supabase broadcasts and
    /// presence.
    static let liveTopics = Audience.topics + [TopicCatalog.realtimeBroadcasts, TopicCatalog.gatewayPresence]

    private func handle(_ message: KafkaMessage, push: Bool) {
        if message.topic == TopicCatalog.realtimeBroadcasts.name { return broadcasts.received(message) }
        if message.topic == TopicCatalog.gatewayPresence.name { return presence.received(message) }
        let receivedAt = ContinuousClock.now
        do {
            let envelope = try EventEnvelope(message)
            if push, message.topic != TopicCatalog.trackingLocations.name, !pushed.firstSighting(of: envelope.id) { return }
            let payload = EventPayload(envelope)
            if push, let change = try TableChange(payload) { changes.publish(change, receivedAt: receivedAt) }
            var audience = try Audience(payload)
            if push, audience == nil, passedOver.first(envelope.type) {
                logger.info(
                    "Not pushing events of this type but to admins (said once per type)",
                    metadata: ["event.type": "\(envelope.type)", "kafka.topic": "\(message.topic)"]
                )
            }
            if let order = audience?.order { orders.record(order: order.id, parties: order.parties) }
            guard push else { return }
            // Admins see every event of the public topics, while one follows them.
            if hub.adminFollowed() { audience = (audience ?? Audience.adminOnly(envelope)).addingAdmin() }
            if let audience { hub.publish(try PushEvent(payload, audience: audience, receivedAt: receivedAt)) }
        } catch {
            // The services' own consumers dead-letter such records; clients just don't see them.
            logger.warning(
                "Not pushing an unreadable event",
                metadata: [
                    "kafka.topic": "\(message.topic)", "kafka.partition": "\(message.partition)",
                    "kafka.offset": "\(message.offset)", "error": "\(error)",
                ]
            )
        }
    }
}

/// Event types seen so far, up to a thousand (a flood of invented types must not grow it).
private final class TypesSeen: Sendable {
    private let types = Mutex<Set<String>>([])

    /// Whether `type` is seen for the first time.
    func first(_ type: String) -> Bool {
        types.withLock { $0.count < 1_000 && $0.insert(type).inserted }
    }
}
