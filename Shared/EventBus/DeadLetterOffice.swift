import Contracts
import Foundation
import Kafka
import Logging
import ServiceKit

/// Lists and replays the dead letters of a topic: `splash dlq` and the console's Dead letters page.
///
/// A dead letter is **replayed** once its original record has been published again to its topic.
/// Each letter replayed is followed by a marker on the dead-letter topic's same partition
/// (`x-replayed-offset`) that names it, and a later replay skips what a marker names. Replaying
/// them all also moves the consumer group `splash-dlq-replay.<topic>.dlq` past them (its committed
/// offsets are the line between replayed and waiting), so the next replay reads only what came
/// after — but the markers alone keep each letter to one replay when that commit is lost (the
/// group's coordinator slow to answer as the command leaves). A crash between a letter's publish
/// and its marker's means it may be replayed twice, which consumers' inboxes make harmless.
public struct DeadLetterOffice: Sendable {
    /// A dead letter and where it is on its dead-letter topic.
    public struct Entry: Sendable {
        public var topic: String
        public var partition: Int32
        public var offset: Int64
        /// When it was parked.
        public var parkedAt: Date?
        public var letter: DeadLetter
        public var replayed: Bool
    }

    /// What replaying a topic's letters did.
    public struct Replay: Sendable {
        public var deadLetterTopic: String
        /// Where each replayed letter landed on its original topic.
        public var published: [(from: Entry, to: KafkaDeliveryReport)]
    }

    public enum Failure: Error, CustomStringConvertible {
        case unknownTopic(String)
        case noSuchLetter(topic: String, partition: Int32, offset: Int64)
        case alreadyReplayed(topic: String, partition: Int32, offset: Int64)

        public var description: String {
            switch self {
            case .unknownTopic(let name): "no dead-letter topic is called \(name)"
            case .noSuchLetter(let topic, let partition, let offset): "\(topic)[\(partition)] holds no dead letter at offset \(offset)"
            case .alreadyReplayed(let topic, let partition, let offset): "the dead letter \(topic)[\(partition)]@\(offset) was replayed already"
            }
        }
    }

    /// The header of a marker record: the offset (on the same partition) of the letter replayed.
    public static let replayedOffsetHeader = "x-replayed-offset"

    /// The marker that says `entry` was replayed: on its dead-letter partition, empty, naming its offset.
    static func marker(of entry: Entry) -> KafkaRecord {
        KafkaRecord(
            topic: entry.topic,
            key: entry.letter.original.key,
            value: [],
            headers: [KafkaHeader(replayedOffsetHeader, "\(entry.offset)")],
            partition: entry.partition
        )
    }

    public let bootstrapServers: String
    let logger: Logger

    public init(bootstrapServers: String, logger: Logger) {
        self.bootstrapServers = bootstrapServers
        self.logger = logger
    }

    /// The dead-letter topic named by `name` (`auth.users` or `auth.users.dlq` → `auth.users.dlq`),
    /// as the cluster has it.
    /// - Throws: `Failure.unknownTopic` when the cluster has no such topic.
    public func deadLetterTopic(_ name: String) async throws -> Topic {
        let wanted = name.hasSuffix(".dlq") ? name : DeadLetter.topic(for: name)
        if let known = TopicCatalog.eventTopics.map(\.deadLetter).first(where: { $0.name == wanted }) { return known }
        guard let topic = try await KafkaInspector(bootstrapServers: bootstrapServers, logger: logger).topic(named: wanted) else {
            throw Failure.unknownTopic(wanted)
        }
        return topic
    }

    /// The consumer group whose committed offsets mark what was replayed.
    public static func replayGroup(of deadLetterTopic: Topic) -> String { "splash-dlq-replay.\(deadLetterTopic.name)" }

    /// Every dead letter `topic` holds, oldest first per partition, each with whether it was
    /// replayed.
    public func letters(of topic: Topic) async throws -> [Entry] {
        let inspector = KafkaInspector(bootstrapServers: bootstrapServers, logger: logger)
        // One look at the offsets: the replay group's position, and the range to read.
        let committed = try await inspector.offsets(of: [topic], group: Self.replayGroup(of: topic))
        let records = try await inspector.records(in: committed)
        return Self.entries(records, committed: Dictionary(uniqueKeysWithValues: committed.map { ($0.partition, $0.committed ?? $0.low) }))
    }

    /// The letters of `records` (one dead-letter topic's), replayed when below `committed` or named
    /// by a marker.
    static func entries(_ records: [KafkaMessage], committed: [Int32: Int64]) -> [Entry] {
        var marked = Set<[Int64]>()
        for record in records {
            if let text = record.headers[text: replayedOffsetHeader], let offset = Int64(text) { marked.insert([Int64(record.partition), offset]) }
        }
        return records.compactMap { record in
            guard let letter = DeadLetter(deadLetterMessage: record) else { return nil }
            let replayed = record.offset < (committed[record.partition] ?? 0) || marked.contains([Int64(record.partition), record.offset])
            return Entry(
                topic: record.topic,
                partition: record.partition,
                offset: record.offset,
                parkedAt: record.timestamp,
                letter: letter,
                replayed: replayed
            )
        }
    }

    /// Publishes every letter of `topic` not yet replayed to its original topic, and moves the
    /// replay group past them.
    public func replayAll(_ topic: Topic) async throws -> Replay {
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: bootstrapServers,
            clientID: "splash-dlq",
            groupID: Self.replayGroup(of: topic),
            topics: [topic.name]
        )
        configuration.stopsAtEnd = true
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: bootstrapServers, clientID: "splash-dlq"),
            logger: logger
        )
        let published = try await withRunningServices([producer, consumer], logger: logger) {
            var published: [(from: Entry, to: KafkaDeliveryReport)] = []
            for await partition in consumer.partitions {
                // The whole partition first: a marker comes after the letter it names.
                var records: [KafkaMessage] = []
                for await record in partition { records.append(record) }
                for entry in Self.entries(records, committed: [:]) where !entry.replayed {
                    published.append((entry, try await producer.send(entry.letter.replayRecord)))
                    try await producer.send(Self.marker(of: entry))
                }
                if let last = records.last { partition.markProcessed(last) }
            }
            return published
        }
        return Replay(deadLetterTopic: topic.name, published: published)
    }

    /// Publishes the letter at `offset` of `topic`'s `partition` to its original topic, then the
    /// marker that says so.
    public func replay(_ topic: Topic, partition: Int32, offset: Int64) async throws -> Replay {
        guard let entry = try await letters(of: topic).first(where: { $0.partition == partition && $0.offset == offset }) else {
            throw Failure.noSuchLetter(topic: topic.name, partition: partition, offset: offset)
        }
        guard !entry.replayed else { throw Failure.alreadyReplayed(topic: topic.name, partition: partition, offset: offset) }
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: bootstrapServers, clientID: "splash-dlq"),
            logger: logger
        )
        let report = try await withRunningServices([producer], logger: logger) {
            let report = try await producer.send(entry.letter.replayRecord)
            try await producer.send(Self.marker(of: entry))
            return report
        }
        return Replay(deadLetterTopic: topic.name, published: [(entry, report)])
    }
}
