import AsyncSignals
import Contracts
import Foundation
import Kafka
import Logging
import ServiceKit
import Synchronization
import TestSupport
import Testing

@Suite struct KafkaClientTests {
    let logger = Logger(label: "kafka-test")

    func producer(_ cluster: KafkaEmbeddedCluster) throws -> KafkaProducer {
        try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientID: "test-producer"),
            logger: logger
        )
    }

    func consumer(_ cluster: KafkaEmbeddedCluster, topic: Topic, group: String, buffer: Int = 256) throws -> KafkaConsumer {
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: cluster.bootstrapServers,
            clientID: "test-consumer",
            groupID: group,
            topics: [topic.name]
        )
        configuration.bufferedMessagesPerPartition = buffer
        configuration.sessionTimeout = .seconds(6)
        return try KafkaConsumer(configuration: configuration, logger: logger)
    }

    /// Reads `count` messages (partitions concurrently), marking each processed, and returns them.
    func consume(_ count: Int, from consumer: KafkaConsumer) async -> [KafkaMessage] {
        let received = MessageLog()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskGroup(of: Void.self) { partitions in
                    for await partition in consumer.partitions {
                        partitions.addTask {
                            for await message in partition {
                                partition.markProcessed(message)
                                received.append(message)
                            }
                        }
                    }
                }
            }
            group.addTask { await received.waitForCount(count) }
            await group.next()
            group.cancelAll()
        }
        return received.messages
    }

    @Test func recordsArriveInOrderPerKeyWithTheirHeaders() async throws {
        let cluster = try await TestKafka.shared.running()
        let topic = try await TestKafka.shared.makeTopic(partitions: 4)
        let producer = try producer(cluster)
        let consumer = try consumer(cluster, topic: topic, group: "order-\(UUID())")
        let records = (0..<1_000).map { index in
            KafkaRecord(
                topic: topic.name,
                key: "key-\(index % 10)",
                value: Array("\(index)".utf8),
                headers: [KafkaHeader("seq", "\(index)"), KafkaHeader("empty", nil)]
            )
        }
        let received = try await withRunningServices([producer, consumer]) {
            let outcomes = await producer.send(records)
            #expect(outcomes.allSatisfy { (try? $0.get()) != nil })
            return await consume(records.count, from: consumer)
        }
        #expect(received.count == 1_000)
        for key in 0..<10 {
            let sequence = received.filter { $0.keyText == "key-\(key)" }.map { Int(String(decoding: $0.value, as: UTF8.self))! }
            #expect(sequence == Array(stride(from: key, to: 1_000, by: 10)))
        }
        let first = try #require(received.first)
        #expect(first.headers[text: "seq"] == String(decoding: first.value, as: UTF8.self))
        #expect(first.headers.contains(KafkaHeader("empty", nil)))
        #expect(first.timestamp != nil)
    }

    @Test func onlyProcessedOffsetsAreCommitted() async throws {
        let cluster = try await TestKafka.shared.running()
        let topic = try await TestKafka.shared.makeTopic(partitions: 1)
        let producer = try producer(cluster)
        let group = "commit-\(UUID())"
        try await withRunningServices([producer]) {
            _ = await producer.send((0..<10).map { KafkaRecord(topic: topic.name, key: "k", value: Array("\($0)".utf8)) })
            let first = try consumer(cluster, topic: topic, group: group)
            try await withRunningServices([first]) {
                // Handle and mark five, take the sixth without finishing it.
                for await partition in first.partitions {
                    var seen = 0
                    for await message in partition {
                        seen += 1
                        if seen <= 5 { partition.markProcessed(message) }
                        if seen == 6 { break }
                    }
                    break
                }
            }
            let second = try consumer(cluster, topic: topic, group: group)
            let redelivered = try await withRunningServices([second]) {
                await consume(5, from: second)
            }
            #expect(redelivered.map(\.offset) == [5, 6, 7, 8, 9])
        }
    }

    @Test func aSlowHandlerPausesItsPartitionInsteadOfBufferingWithoutBound() async throws {
        let cluster = try await TestKafka.shared.running()
        let topic = try await TestKafka.shared.makeTopic(partitions: 1)
        let producer = try producer(cluster)
        let consumer = try consumer(cluster, topic: topic, group: "pause-\(UUID())", buffer: 16)
        let values = (0..<600).map { Array("\($0)".utf8) }
        let received = try await withRunningServices([producer, consumer]) {
            _ = await producer.send(values.map { KafkaRecord(topic: topic.name, key: "k", value: $0) })
            var partitions = consumer.partitions.makeAsyncIterator()
            let partition = try #require(await partitions.next())
            // Nobody reads for a while: the buffer must stay near its bound.
            try await Task.sleep(for: .seconds(1))
            #expect(partition.bufferedCount <= 16 * 2)
            var received: [[UInt8]] = []
            for await message in partition {
                received.append(message.value)
                partition.markProcessed(message)
                if received.count == values.count { break }
            }
            return received
        }
        #expect(received == values)
    }

    @Test func sendingAfterShutdownFailsWithANonRetriableError() async throws {
        let cluster = try await TestKafka.shared.running()
        let topic = try await TestKafka.shared.makeTopic()
        let producer = try producer(cluster)
        try await withRunningServices([producer]) {
            let report = try await producer.send(KafkaRecord(topic: topic.name, key: "k", value: [1]))
            #expect(report.topic == topic.name && report.offset >= 0)
        }
        await #expect(throws: KafkaDeliveryError.producerClosed) {
            try await producer.send(KafkaRecord(topic: topic.name, key: "k", value: [1]))
        }
    }

    @Test func aConsumerStopsWithinItsCloseTimeoutWhileAHandlerNeverFinishes() async throws {
        let cluster = try await TestKafka.shared.running()
        let topic = try await TestKafka.shared.makeTopic(partitions: 1)
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: cluster.bootstrapServers,
            clientID: "test-consumer",
            groupID: "close-\(UUID())",
            topics: [topic.name]
        )
        // A revocation would wait a minute for the stuck handler; leaving may take 3 s.
        configuration.sessionTimeout = .seconds(150)
        configuration.revocationDrainTimeout = .seconds(60)
        configuration.closeTimeout = .seconds(3)
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        let producer = try producer(cluster)
        let stopped = OneShot<Duration>()
        // Unstructured, so that a consumer stuck in shutdown fails the test instead of hanging it.
        Task {
            do {
                let shutdownStarted = try await withRunningServices([producer, consumer]) {
                    _ = try await producer.send(KafkaRecord(topic: topic.name, key: "k", value: [1]))
                    var partitions = consumer.partitions.makeAsyncIterator()
                    let partition = try #require(await partitions.next())
                    var messages = partition.makeAsyncIterator()
                    // Taken and never finished, as by a handler stuck on a dead dependency.
                    #expect(await messages.next()?.value == [1])
                    return ContinuousClock.now
                }
                stopped.complete(ContinuousClock.now - shutdownStarted)
            } catch {
                Issue.record(error)
                stopped.complete(.zero)
            }
        }
        try #require(await stopped.arrives(within: .seconds(90)), "the consumer did not stop within 90 s")
        // Far below the 60 s a revocation would wait for the handler. (The margin over the 3 s close
        // timeout is for a machine busy with the rest of the suite, where the embedded broker
        // answers late: 10 s was not always enough.)
        #expect(await stopped.value() < .seconds(30))
    }

    @Test func theProducerReachesTheClusterOrSaysItCannot() async throws {
        let cluster = try await TestKafka.shared.running()
        try await producer(cluster).checkConnection(timeout: .seconds(5))
        let nowhere = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: "127.0.0.1:\(freePort())", clientID: "nowhere"),
            logger: logger
        )
        await #expect(throws: KafkaError.self) { try await nowhere.checkConnection(timeout: .milliseconds(500)) }
    }
}

/// Messages a test consumer has seen, and a way to wait for a number of them.
final class MessageLog: Sendable {
    private let state = Mutex<[KafkaMessage]>([])

    var messages: [KafkaMessage] { state.withLock { $0 } }

    func append(_ message: KafkaMessage) {
        state.withLock { $0.append(message) }
    }

    func waitForCount(_ count: Int) async {
        while state.withLock({ $0.count }) < count, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}
