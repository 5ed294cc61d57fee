import Contracts
import Database
import EventBus
import Foundation
import Kafka
import Logging
import PostgresNIO
import ServiceLifecycle
import TestSupport

// A consumer in a process of its own, for the event bus's integration tests: it consumes
// `ProbeEvent`s from PROBE_TOPIC in group PROBE_GROUP and applies each through the inbox of schema
// PROBE_SCHEMA, until SIGTERM.
let environment = ProcessInfo.processInfo.environment
guard let brokers = environment["KAFKA_BROKERS"], let databaseURL = environment["DATABASE_URL"],
    let topic = environment["PROBE_TOPIC"], let group = environment["PROBE_GROUP"], let schema = environment["PROBE_SCHEMA"]
else {
    FileHandle.standardError.write(Data("event-probe needs KAFKA_BROKERS, DATABASE_URL, PROBE_TOPIC, PROBE_GROUP and PROBE_SCHEMA\n".utf8))
    exit(2)
}
// The tests stop this process with SIGTERM. If the test process dies first, the embedded broker
// dies with it and a graceful shutdown has no broker to finish with (it waits for the group
// coordinator forever), while this orphan keeps the test runner's output pipe open and `swift test`
// hangs. So an orphaned probe leaves at once.
let parent = getppid()
Thread.detachNewThread {
    while getppid() == parent {
        Thread.sleep(forTimeInterval: 0.5)
    }
    exit(3)
}
var logger = Logger(label: "event-probe")
logger.logLevel = .warning
let client = PostgresClient(configuration: try PostgresURL.parse(databaseURL))
let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: brokers, clientID: "event-probe"), logger: logger)
let inbox = try Inbox(schema: schema, client: client, logger: logger)
let consumer = EventConsumer(
    configuration: KafkaConsumerConfiguration(bootstrapServers: brokers, clientID: "event-probe", groupID: group, topics: [topic]),
    registry: EventRegistry([ProbeEvent.self]),
    deadLetters: producer,
    retry: RetryPolicy(attempts: 3, initialBackoff: .milliseconds(50)),
    logger: logger,
    handler: inbox.handler(consumer: group) { event, connection in
        try await ProbeEffects.apply(event.event as! ProbeEvent, schema: schema, on: connection, logger: logger)
    }
)
let services = ServiceGroup(
    configuration: ServiceGroupConfiguration(
        services: [.init(service: client), .init(service: producer), .init(service: consumer)],
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger
    )
)
try await services.run()
