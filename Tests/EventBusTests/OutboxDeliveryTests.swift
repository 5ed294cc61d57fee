import Contracts
import Database
import EventBus
import Foundation
import Kafka
import LocalStack
import Logging
import PostgresNIO
import ServiceKit
import Synchronization
import TestSupport
import Testing

@Suite("Outbox to consumer delivery") struct OutboxDeliveryTests {
    /// The probe consumer binary built beside this test bundle.
    static let probe = builtExecutable("EventProbe")

    @Test func tenThousandEventsReachAConsumerInAnotherProcessOnceAndInOrderPerKey() async throws {
        try await EventBusHarness.with { harness in
            try await harness.writeEvents(keys: 100, perKey: 100, batch: 500)
            let producer = try harness.producer()
            let process = ProcessCommand(
                Self.probe,
                environment: [
                    "KAFKA_BROKERS": harness.cluster.bootstrapServers,
                    "DATABASE_URL": harness.database.url,
                    "PROBE_TOPIC": harness.topic.name,
                    "PROBE_GROUP": "probe-\(UUID())",
                    "PROBE_SCHEMA": EventBusHarness.schema,
                ]
            ).makeProcess()
            try process.run()
            defer { process.terminate() }
            let summary = try await withRunningServices([producer, try harness.relay(producer)]) {
                try await harness.waitForEffects(10_000, timeout: .seconds(120))
            }
            #expect(summary == ProbeEffects.Summary(effects: 10_000, distinct: 10_000, outOfOrder: 0))
            let pending = try await harness.client.query("SELECT count(*)::int FROM probe.outbox WHERE published_at IS NULL", logger: harness.logger)
                .collect().first?.decode(Int.self)
            #expect(pending == 0)
        }
    }

    @Test func kcatSeesTheCloudEventsHeadersAndTheJSONPayload() async throws {
        let kcat = try #require(TestKafka.kcat, "kcat is installed by make test")
        try await EventBusHarness.with(partitions: 1) { harness in
            try await harness.writeEvents(keys: 1, perKey: 1)
            let producer = try harness.producer()
            try await withRunningServices([producer, try harness.relay(producer)]) {
                let deadline = ContinuousClock.now + .seconds(20)
                while try await harness.client.query("SELECT count(*)::int FROM probe.outbox WHERE published_at IS NULL", logger: harness.logger)
                    .collect().first?.decode(Int.self) != 0, ContinuousClock.now < deadline
                {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let output = try await ProcessCommand(
                kcat,
                ["-C", "-b", harness.cluster.bootstrapServers, "-t", harness.topic.name, "-J", "-o", "beginning", "-e", "-q"]
            ).runToCompletion()
            let line = try #require(output.split(separator: "\n").first)
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(record["key"] as? String == "key-0")
            let payload = try #require(record["payload"] as? String)
            #expect(try JSONDecoder().decode(ProbeEvent.self, from: Data(payload.utf8)) == ProbeEvent(key: "key-0", seq: 0))
            // kcat -J lists headers as a flat [name, value, name, value, …] array.
            let flat = try #require(record["headers"] as? [String])
            let headers = Dictionary(stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) }) { first, _ in first }
            #expect(headers["ce_specversion"] == "1.0")
            #expect(headers["ce_type"] == ProbeEvent.type)
            #expect(headers["ce_source"] == "/splash/probe")
            #expect(headers["ce_subject"] == "key-0")
            #expect(headers["content-type"] == "application/json")
            #expect(UUID(uuidString: headers["ce_id"] ?? "") != nil)
            #expect(EventJSON.parseTimestamp(headers["ce_time"] ?? "") != nil)
        }
    }

    @Test func aBrokerOutageDelaysEventsButLosesNone() async throws {
        let cluster = try KafkaEmbeddedCluster(brokers: 3, topics: [])
        defer { cluster.shutdown() }
        try await EventBusHarness.with(cluster: cluster) { harness in
            let producer = try harness.producer()
            let consumer = try harness.consumer(group: "outage-\(UUID())", deadLetters: producer)
            let summary = try await withRunningServices([producer, try harness.relay(producer), consumer]) {
                // Let the consumer join before the lights go out.
                try await harness.writeEvents(keys: 1, perKey: 1, prefix: "warm-up")
                _ = try await harness.waitForEffects(1, timeout: .seconds(30))
                try cluster.setAllBrokers(down: true)
                let outageStarted = ContinuousClock.now
                try await harness.writeEvents(keys: 50, perKey: 20, batch: 50)
                try await Task.sleep(until: outageStarted + .seconds(10))
                try cluster.setAllBrokers(down: false)
                return try await harness.waitForEffects(1_001, timeout: .seconds(90))
            }
            #expect(summary == ProbeEffects.Summary(effects: 1_001, distinct: 1_001, outOfOrder: 0))
        }
    }

    @Test func eventsPublishedTwiceByARelayThatDiedBeforeMarkingHaveTheirEffectOnce() async throws {
        try await EventBusHarness.with { harness in
            try await harness.writeEvents(keys: 10, perKey: 20)
            let producer = try harness.producer()
            let calls = HandlerCalls()
            let consumer = try harness.consumer(group: "replay-\(UUID())", calls: calls, deadLetters: producer)
            let relay = try harness.relay(producer)
            let summary = try await withRunningServices([producer, consumer]) {
                // Publish everything, then "die" before the commit that marks the rows.
                do {
                    _ = try await relay.publishPending(markingPublished: false)
                    Issue.record("the interrupted round should have rolled back")
                } catch {
                    #expect(error is OutboxRelay.RelayInterrupted)
                }
                return try await withRunningServices([relay]) {
                    let summary = try await harness.waitForEffects(200)
                    let deadline = ContinuousClock.now + .seconds(30)
                    while calls.total < 400, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
                    return summary
                }
            }
            #expect(calls.total == 400, "every event was delivered twice")
            #expect(summary == ProbeEffects.Summary(effects: 200, distinct: 200, outOfOrder: 0))
        }
    }

    /// A transaction that appended events wakes its own process's relay once it has committed,
    /// without a `NOTIFY` (which would serialise every writer's commit); a writer without a relay
    /// of its own (another process) wakes the relays with one. The relay polls only once a minute
    /// here: an event waiting for the poll would miss the deadline.
    @Test func aWriterWakesItsOwnRelayAfterCommitWithoutANotifyAndOthersWithOne() async throws {
        try await EventBusHarness.with { harness in
            let producer = try harness.producer()
            var configuration = OutboxRelay.Configuration()
            configuration.pollInterval = .seconds(60)
            let relay = try OutboxRelay(
                schema: EventBusHarness.schema,
                client: harness.client,
                producer: producer,
                configuration: configuration,
                logger: harness.logger
            )
            let consumer = try harness.consumer(group: "wakes-\(UUID())", deadLetters: producer)
            let notified = Mutex(0)
            let listening = Task {
                try await harness.client.withConnection { connection in
                    try await connection.listen(on: "\(EventBusHarness.schema)_outbox") { notifications in
                        for try await _ in notifications { notified.withLock { $0 += 1 } }
                    }
                }
            }
            defer { listening.cancel() }
            try await withRunningServices([producer, relay, consumer]) {
                try await Task.sleep(for: .seconds(1))  // the relay's first round and its LISTEN
                let own = try Outbox(schema: EventBusHarness.schema, service: "probe", relay: relay)
                // A rolled-back transaction wakes nothing and publishes nothing.
                _ = try? await harness.client.withTransaction(settings: [], logger: harness.logger) { connection in
                    try await own.append(ProbeEvent(key: "rolled-back", seq: 0), topic: harness.topic.name, on: connection, logger: harness.logger)
                    throw ProbeFailure()
                }
                try await harness.client.withTransaction(settings: [], logger: harness.logger) { connection in
                    try await own.append(ProbeEvent(key: "own", seq: 0), topic: harness.topic.name, on: connection, logger: harness.logger)
                }
                #expect(try await harness.waitForEffects(1, timeout: .seconds(20)).effects == 1)
                #expect(notified.withLock { $0 } == 0, "the writer's own relay was woken without a NOTIFY")
                let other = try Outbox(schema: EventBusHarness.schema, service: "probe")
                try await harness.client.withTransaction(settings: [], logger: harness.logger) { connection in
                    try await other.append(ProbeEvent(key: "other", seq: 0), topic: harness.topic.name, on: connection, logger: harness.logger)
                }
                #expect(try await harness.waitForEffects(2, timeout: .seconds(20)).effects == 2)
                #expect(notified.withLock { $0 } == 1, "a writer without a relay of its own notified once")
            }
            let published = try await harness.client.query("SELECT count(*)::int FROM probe.outbox", logger: harness.logger).collect().first?.decode(
                Int.self
            )
            #expect(published == 2, "the rolled-back event is not in the outbox")
        }
    }

    @Test func twoRelaysPublishEveryEventOnceInOrderPerKey() async throws {
        try await EventBusHarness.with { harness in
            let first = try harness.producer("relay-a")
            let second = try harness.producer("relay-b")
            let calls = HandlerCalls()
            let consumer = try harness.consumer(group: "two-relays-\(UUID())", calls: calls, deadLetters: first)
            let summary = try await withRunningServices([first, second, try harness.relay(first), try harness.relay(second), consumer]) {
                try await harness.writeEvents(keys: 20, perKey: 50, batch: 20, pause: .milliseconds(5))
                return try await harness.waitForEffects(1_000)
            }
            #expect(summary == ProbeEffects.Summary(effects: 1_000, distinct: 1_000, outOfOrder: 0))
            #expect(calls.total == 1_000, "no relay published a row another had published")
        }
    }
}
