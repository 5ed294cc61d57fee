import Contracts
import EventBus
import Foundation
import Kafka
import Logging
import ServiceKit
import TestSupport
import Testing

@Suite("Consumers under failure") struct ConsumerFailureTests {
    @Test func anEventWhoseHandlerAlwaysFailsIsDeadLetteredAndThePartitionMovesOn() async throws {
        try await EventBusHarness.with(partitions: 1) { harness in
            let producer = try harness.producer()
            let calls = HandlerCalls()
            let consumer = try harness.consumer(group: "dlq-\(UUID())", calls: calls, deadLetters: producer) { event in
                event.key == "key-0" && event.seq == 0
            }
            let summary = try await withRunningServices([producer, try harness.relay(producer), consumer]) {
                // key-0/0 comes first on the only partition; everything behind it must still pass.
                try await harness.writeEvents(keys: 5, perKey: 10)
                return try await harness.waitForEffects(49)
            }
            #expect(summary.effects == 49 && summary.distinct == 49)
            // key-0's later events come after a gap, by design: the failed one is in the DLQ.
            let letters = try await deadLetters(harness)
            let letter = try #require(letters.first)
            #expect(letters.count == 1)
            #expect(letter.attempts == 3)
            #expect(letter.error == "the probe handler refuses this event")
            #expect(letter.original.topic == harness.topic.name)
            #expect(letter.original.partition == 0)
            #expect(letter.original.offset == 0)
            #expect(letter.original.keyText == "key-0")
            #expect(try EventJSON.decoder.decode(ProbeEvent.self, from: Data(letter.original.value)) == ProbeEvent(key: "key-0", seq: 0))
            #expect(letter.original.headers[text: "ce_type"] == ProbeEvent.type)
            #expect(calls.total == 49 + 3)
        }
    }

    @Test func unreadableAndUnknownRecordsNeverStopAPartition() async throws {
        try await EventBusHarness.with(partitions: 1) { harness in
            let producer = try harness.producer()
            let consumer = try harness.consumer(group: "junk-\(UUID())", deadLetters: producer)
            let summary = try await withRunningServices([producer, consumer, try harness.relay(producer)]) {
                let unknown = try EventEnvelope(ProbeEvent(key: "key-0", seq: 0), source: "/elsewhere")
                var unknownRecord = unknown.record(topic: harness.topic.name)
                unknownRecord.headers = unknownRecord.headers.map { $0.name == "ce_type" ? KafkaHeader("ce_type", "elsewhere.thing.v9") : $0 }
                _ = await producer.send([
                    KafkaRecord(topic: harness.topic.name, key: "key-0", value: Array("not a cloud event".utf8)),
                    unknownRecord,
                ])
                try await harness.writeEvents(keys: 1, perKey: 5)
                return try await harness.waitForEffects(5)
            }
            #expect(summary == ProbeEffects.Summary(effects: 5, distinct: 5, outOfOrder: 0))
            let letters = try await deadLetters(harness)
            #expect(letters.count == 1)
            #expect(letters.first?.error.hasPrefix("unreadable event") == true)
            #expect(letters.first?.attempts == 1)
        }
    }

    @Test func aSecondConsumerJoiningMidStreamLosesNothingAndDuplicatesNoEffect() async throws {
        try await EventBusHarness.with(partitions: 6) { harness in
            let producer = try harness.producer()
            let group = "join-\(UUID())"
            let first = try harness.consumer(group: group, deadLetters: producer)
            let second = try harness.consumer(group: group, deadLetters: producer)
            let summary = try await withRunningServices([producer, try harness.relay(producer), first]) {
                try await harness.writeEvents(keys: 30, perKey: 20, prefix: "before", batch: 30, pause: .milliseconds(20))
                return try await withRunningServices([second]) {
                    try await harness.writeEvents(keys: 30, perKey: 20, prefix: "after", batch: 30, pause: .milliseconds(20))
                    return try await harness.waitForEffects(1_200)
                }
            }
            #expect(summary == ProbeEffects.Summary(effects: 1_200, distinct: 1_200, outOfOrder: 0))
        }
    }

    /// Everything on the harness topic's dead-letter topic.
    func deadLetters(_ harness: EventBusHarness) async throws -> [DeadLetter] {
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: harness.cluster.bootstrapServers,
            clientID: "dlq-reader",
            groupID: "dlq-reader-\(UUID())",
            topics: [harness.topic.deadLetter.name]
        )
        configuration.stopsAtEnd = true
        configuration.commitsOffsets = false
        let consumer = try KafkaConsumer(configuration: configuration, logger: harness.logger)
        return try await withRunningServices([consumer]) {
            var letters: [DeadLetter] = []
            for await partition in consumer.partitions {
                for await message in partition {
                    if let letter = DeadLetter(deadLetterMessage: message) { letters.append(letter) }
                }
                break
            }
            return letters
        }
    }
}
