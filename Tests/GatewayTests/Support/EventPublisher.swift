import Contracts
import EventBus
import Foundation
import Kafka
import Logging
import ServiceKit

/// Publishes domain events to the test cluster's catalog topics, as the services' outbox relays
/// do (CloudEvents in the Kafka binary mode).
struct EventPublisher: Sendable {
    let producer: KafkaProducer

    static func with<Result: Sendable>(
        _ kafka: KafkaEmbeddedCluster,
        _ body: @Sendable (EventPublisher) async throws -> Result
    ) async throws -> Result {
        var logger = Logger(label: "test-publisher")
        logger.logLevel = .warning
        var configuration = KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers, clientID: "gateway-test-publisher")
        configuration.linger = .zero
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        return try await withRunningServices([producer]) {
            try await body(EventPublisher(producer: producer))
        }
    }

    /// Publishes `event` and returns its CloudEvent id.
    @discardableResult
    func publish<Event: DomainEvent>(_ event: Event, source: String = "/splash/test") async throws -> String {
        try await publish(try EventEnvelope(event, source: source), on: Event.topic)
    }

    /// Publishes `envelope` as it is (again, for a relay's second delivery) and returns its id.
    @discardableResult
    func publish(_ envelope: EventEnvelope, on topic: Topic) async throws -> String {
        try await producer.send(envelope.record(topic: topic.name))
        return envelope.id.uuidString.lowercased()
    }
}
