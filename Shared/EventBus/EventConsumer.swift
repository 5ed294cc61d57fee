import Contracts
import Kafka
import Logging
import Metrics
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Consumes domain events from topics in a consumer group and runs a handler for each one.
///
/// Partitions are handled concurrently, one event at a time within a partition, so a key's
/// events are handled in order. An event's offset is stored only after its handler succeeded (or
/// it was dead-lettered): at-least-once. A failing handler is retried with the `RetryPolicy`'s
/// backoff; after the last attempt the event goes to `<topic>.dlq` with `x-error`, `x-attempts` and
/// `x-original-*` headers, and the partition moves on. Records that are not readable CloudEvents go
/// straight to the dead-letter topic; types the registry does not know are skipped with a log line.
///
/// On graceful shutdown the consumer stops taking events, lets the current ones finish (a retry
/// wait is cut short and the event left for redelivery), commits, and leaves the group.
public final class EventConsumer: Service, Sendable {
    public typealias Handler = @Sendable (ReceivedEvent) async throws -> Void

    private let configuration: KafkaConsumerConfiguration
    private let registry: EventRegistry
    private let deadLetters: KafkaProducer
    private let retry: RetryPolicy
    private let handler: Handler
    private let logger: Logger
    private let handled: Counter
    private let deadLettered: Counter
    private let skipped: Counter
    private let running = Mutex<KafkaConsumer?>(nil)

    /// - Parameters:
    ///   - configuration: the Kafka consumer's group, topics and settings.
    ///   - deadLetters: the producer dead letters are sent through (run it as a service before
    ///     this one, so it outlives it).
    public init(
        configuration: KafkaConsumerConfiguration,
        registry: EventRegistry,
        deadLetters: KafkaProducer,
        retry: RetryPolicy,
        logger: Logger,
        handler: @escaping Handler
    ) {
        self.configuration = configuration
        self.registry = registry
        self.deadLetters = deadLetters
        self.retry = retry
        self.handler = handler
        self.logger = logger
        let group = configuration.groupID
        handled = Counter(label: "events_handled_total", dimensions: [("group", group)])
        deadLettered = Counter(label: "events_dead_lettered_total", dimensions: [("group", group)])
        skipped = Counter(label: "events_skipped_total", dimensions: [("group", group)])
    }

    /// The partitions this consumer owns now; none before it runs.
    public var assignment: [(topic: String, partition: Int32)] {
        running.withLock { $0?.assignment } ?? []
    }

    public func run() async throws {
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        running.withLock { $0 = consumer }
        defer { running.withLock { $0 = nil } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await consumer.run() }
            for await partition in consumer.partitions {
                group.addTask { await self.process(partition) }
            }
            try await group.waitForAll()
        }
    }

    private func process(_ partition: KafkaPartition) async {
        for await message in partition {
            guard await handle(message) else { return }
            partition.markProcessed(message)
        }
    }

    /// Handles one record to completion (handled, skipped or dead-lettered); `false` when shutdown
    /// interrupted it, so its offset must not be stored.
    private func handle(_ message: KafkaMessage) async -> Bool {
        let received: ReceivedEvent
        do {
            let envelope = try EventEnvelope(message)
            guard let event = try registry.decode(envelope) else {
                skipped.increment()
                logger.info(
                    "Skipping an event of a type this consumer does not know",
                    metadata: metadata(message, ["event.type": "\(envelope.type)"])
                )
                return true
            }
            received = ReceivedEvent(event: event, envelope: envelope, topic: message.topic, partition: message.partition, offset: message.offset)
        } catch {
            // Retrying cannot make an unreadable record readable.
            return await deadLetter(DeadLetter(original: message, error: "unreadable event: \(error)", attempts: 1))
        }
        var attempt = 1
        while true {
            do {
                try await handler(received)
                handled.increment()
                return true
            } catch {
                if attempt >= retry.attempts {
                    logger.error(
                        "Event handler failed; sending the event to the dead-letter topic",
                        metadata: metadata(message, ["error": "\(error.logDescription)", "attempts": "\(attempt)"])
                    )
                    return await deadLetter(DeadLetter(original: message, error: "\(error)", attempts: attempt))
                }
                logger.warning(
                    "Event handler failed; retrying",
                    metadata: metadata(message, ["error": "\(error.logDescription)", "attempt": "\(attempt)"])
                )
                guard await pause(retry.backoff(after: attempt)) else { return false }
                attempt += 1
            }
        }
    }

    /// Publishes a dead letter, retrying until it is delivered: moving on without it would lose
    /// the event.
    private func deadLetter(_ letter: DeadLetter) async -> Bool {
        var attempt = 1
        while true {
            do {
                try await deadLetters.send(letter.record)
                deadLettered.increment()
                return true
            } catch {
                logger.error("Could not publish a dead letter; retrying", metadata: metadata(letter.original, ["error": "\(error.logDescription)"]))
                guard await pause(retry.backoff(after: attempt)) else { return false }
                attempt += 1
            }
        }
    }

    /// Sleeps `duration` unless shutdown begins; returns whether to carry on.
    private func pause(_ duration: Duration) async -> Bool {
        guard !Task.isShuttingDownGracefully else { return false }
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
        return !Task.isShuttingDownGracefully && !Task.isCancelled
    }

    private func metadata(_ message: KafkaMessage, _ extra: Logger.Metadata) -> Logger.Metadata {
        extra.merging([
            "kafka.topic": "\(message.topic)",
            "kafka.partition": "\(message.partition)",
            "kafka.offset": "\(message.offset)",
        ]) { extra, _ in extra }
    }
}
