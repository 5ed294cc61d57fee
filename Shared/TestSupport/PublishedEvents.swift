import Contracts
import EventBus
import Foundation
import Kafka
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle

extension TestDatabase {
    /// Waits until the relay has published every outbox row of `schema` (or marked it failed).
    package func waitUntilOutboxIsPublished(schema: String, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await withClient({ client in
            try await client.query(
                PostgresQuery(unsafeSQL: "SELECT count(*)::int FROM \(schema).outbox WHERE published_at IS NULL AND failed_at IS NULL")
            )
            .collect().first?.decode(Int.self) ?? 0
        }) > 0 {
            guard ContinuousClock.now < deadline else { throw PublishedEventsError.outboxNotPublished(schema) }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

extension TestDatabase {
    /// The ids of the events of `type` keyed `key` in `schema`'s outbox, oldest first: what this
    /// service instance published, told apart from other instances' on a topic the tests share.
    package func outboxEventIDs(schema: String, type: String, key: String) async throws -> [UUID] {
        try await withClient { client in
            try await client.query(
                PostgresQuery(
                    unsafeSQL: "SELECT event_id FROM \(schema).outbox WHERE type = $1 AND key = $2 ORDER BY id",
                    binds: {
                        var binds = PostgresBindings()
                        binds.append(type)
                        binds.append(key)
                        return binds
                    }()
                )
            )
            .collect().map { try $0.decode(UUID.self) }
        }
    }
}

extension TestDatabase {
    /// The erasure acknowledgements of `user` that the service on `schema` published: those of
    /// its outbox, as read back from their topic (other tests' instances of the service read the
    /// same deletions and acknowledge on the same topic), once the outbox is published.
    package func erasureAcknowledgements<Acknowledgement: ErasureAcknowledgement>(
        _ type: Acknowledgement.Type,
        of user: UUID,
        schema: String
    ) async throws -> [EventEnvelope] {
        try await waitUntilOutboxIsPublished(schema: schema)
        let key = user.uuidString.lowercased()
        let ids = try await outboxEventIDs(schema: schema, type: type.type, key: key)
        return try await TestKafka.shared.events(on: type.topic.name, key: key).filter { ids.contains($0.id) }
    }

    /// `erasureAcknowledgements`, once there is one: waits up to `timeout` for the service to have
    /// erased `user`.
    package func awaitErasureAcknowledgements<Acknowledgement: ErasureAcknowledgement>(
        _ type: Acknowledgement.Type,
        of user: UUID,
        schema: String,
        timeout: Duration = .seconds(30)
    ) async throws -> [EventEnvelope] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let acknowledged = try await erasureAcknowledgements(type, of: user, schema: schema)
            if !acknowledged.isEmpty || ContinuousClock.now >= deadline { return acknowledged }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}

package enum PublishedEventsError: Error {
    case outboxNotPublished(String)
}

/// Every event on `topic` of the cluster at `bootstrapServers`, in order per partition: the topic
/// read from its beginning to its end, in a consumer group of its own that commits nothing.
package func publishedEvents(on topic: String, bootstrapServers: String) async throws -> [EventEnvelope] {
    var configuration = KafkaConsumerConfiguration(
        bootstrapServers: bootstrapServers,
        clientID: "test-reader",
        groupID: "test-reader-\(UUID())",
        topics: [topic]
    )
    configuration.stopsAtEnd = true
    configuration.commitsOffsets = false
    var logger = Logger(label: "test-reader")
    logger.logLevel = .warning
    let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
    return try await withRunningServices([consumer], logger: logger) {
        try await withThrowingTaskGroup(of: [EventEnvelope].self) { group in
            for await partition in consumer.partitions {
                group.addTask {
                    var events: [EventEnvelope] = []
                    for await message in partition {
                        events.append(try EventEnvelope(message))
                    }
                    return events
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }
}

extension TestKafka {
    /// The events on `topic` whose key is `key`, in order (`publishedEvents(on:bootstrapServers:)`).
    package func events(on topic: String, key: String) async throws -> [EventEnvelope] {
        try await publishedEvents(on: topic, bootstrapServers: running().bootstrapServers).filter { $0.key == key }
    }

    /// Publishes `events` as their services would (CloudEvents, keyed by aggregate), and waits for
    /// every delivery report.
    package func publish(_ events: [any DomainEvent], source: String) async throws {
        try await publish(events.map { event in (try EventEnvelope(event, source: source), type(of: event).topic.name) })
    }

    /// Publishes each envelope on its topic as it is (its id and time kept: a redelivery, an old
    /// event), and waits for every delivery report.
    package func publish(_ envelopes: [(envelope: EventEnvelope, topic: String)]) async throws {
        try await publish(records: envelopes.map { $0.envelope.record(topic: $0.topic) })
    }

    /// Publishes `records` as they are (a topic that carries no events, such as the gateways'
    /// presence), and waits for every delivery report.
    package func publish(records: [KafkaRecord]) async throws {
        var logger = Logger(label: "test-publisher")
        logger.logLevel = .warning
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: try running().bootstrapServers, clientID: "test-publisher"),
            logger: logger
        )
        try await withRunningServices([producer], logger: logger) {
            for record in records {
                _ = try await producer.send(record)
            }
        }
    }
}
