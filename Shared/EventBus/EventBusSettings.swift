import Contracts
import Kafka
import ServiceKit

/// How a service reaches Kafka and runs its outbox and consumers.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `KAFKA_BROKERS` | required | bootstrap servers, `host:port[,host:port…]` |
/// | `KAFKA_COMPRESSION` | `lz4` | `none`, `lz4` or `zstd` |
/// | `KAFKA_LINGER` | `0ms` | how long a record waits for others to fill its batch (the relay hands Kafka whole rounds) |
/// | `KAFKA_BATCH_SIZE` | `1MiB` | largest batch per partition |
/// | `KAFKA_MESSAGE_TIMEOUT` | `2m` | how long a record is retried before its delivery fails |
/// | `KAFKA_FETCH_MAX_WAIT` | `100ms` | how long a consumer's fetch waits for new records |
/// | `KAFKA_SESSION_TIMEOUT` | `30s` | how long a consumer may go silent before its group hands its partitions to the others (at least 6 s, the brokers' usual floor) |
/// | `KAFKA_CREATE_TOPICS` | `true` | create the service's topics at start-up if missing |
/// | `EVENTS_RETRY_ATTEMPTS` | `5` | handler attempts before an event is dead-lettered |
/// | `EVENTS_RETRY_BACKOFF` | `200ms` | first wait between attempts; doubles up to 10 s |
/// | `OUTBOX_BATCH_SIZE` | `500` | events the relay publishes per round |
/// | `OUTBOX_POLL_INTERVAL` | `1s` | how often the relay looks without a notification |
/// | `OUTBOX_RETENTION` | `1h` | how long published outbox rows are kept |
package struct EventBusSettings: Sendable {
    package var brokers: String
    package var compression: KafkaProducerConfiguration.Compression
    package var linger: Duration
    package var batchSize: Int
    package var messageTimeout: Duration
    package var fetchMaxWait: Duration
    package var sessionTimeout: Duration
    package var createsTopics: Bool
    package var retry: RetryPolicy
    package var outbox: OutboxRelay.Configuration

    package init(from reader: ConfigurationReader) throws(ConfigurationError) {
        brokers = try reader.string("KAFKA_BROKERS")
        compression = try reader.choice("KAFKA_COMPRESSION", default: .lz4)
        linger = try reader.duration("KAFKA_LINGER", default: .zero)
        batchSize = try reader.byteCount("KAFKA_BATCH_SIZE", default: 1 << 20, in: 1_024...(64 << 20))
        messageTimeout = try reader.duration("KAFKA_MESSAGE_TIMEOUT", default: .seconds(120), minimum: .seconds(1))
        fetchMaxWait = try reader.duration("KAFKA_FETCH_MAX_WAIT", default: .milliseconds(100), minimum: .milliseconds(1))
        sessionTimeout = try reader.duration("KAFKA_SESSION_TIMEOUT", default: .seconds(30), minimum: .seconds(6))
        createsTopics = try reader.bool("KAFKA_CREATE_TOPICS", default: true)
        retry = RetryPolicy(
            attempts: try reader.integer("EVENTS_RETRY_ATTEMPTS", default: 5, in: 1...100),
            initialBackoff: try reader.duration("EVENTS_RETRY_BACKOFF", default: .milliseconds(200))
        )
        outbox = OutboxRelay.Configuration()
        outbox.batchSize = try reader.integer("OUTBOX_BATCH_SIZE", default: 500, in: 1...10_000)
        outbox.pollInterval = try reader.duration("OUTBOX_POLL_INTERVAL", default: .seconds(1), minimum: .milliseconds(10))
        outbox.retention = try reader.duration("OUTBOX_RETENTION", default: .seconds(3_600))
    }

    /// The producer of service `clientID` (its outbox relay and dead letters). It sends without
    /// lingering by default: the relay hands Kafka a whole round at once and waits for it, so a
    /// linger would only add itself to every event's latency (and a round's, on a busy outbox).
    package func producer(clientID: String) -> KafkaProducerConfiguration {
        var configuration = KafkaProducerConfiguration(bootstrapServers: brokers, clientID: clientID)
        configuration.compression = compression
        configuration.linger = linger
        configuration.batchSize = batchSize
        configuration.messageTimeout = messageTimeout
        return configuration
    }

    /// A consumer in `group` reading `topics`.
    package func consumer(clientID: String, group: String, topics: [Topic]) -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(bootstrapServers: brokers, clientID: clientID, groupID: group, topics: topics.map(\.name))
        configuration.fetchMaxWait = fetchMaxWait
        configuration.sessionTimeout = sessionTimeout
        return configuration
    }
}

extension ReadinessCheck {
    /// Ready when a Kafka broker answers a metadata request within two seconds.
    package static func kafka(_ producer: KafkaProducer) -> ReadinessCheck {
        ReadinessCheck("kafka") { try await producer.checkConnection(timeout: .seconds(2)) }
    }
}
