import Contracts
import EventBus
import Foundation
import Kafka
import TestSupport
import Testing

@Suite struct EnvelopeTests {
    let event = ProfileUpdated(
        userId: UUID(),
        username: "ana",
        avatarUrl: nil,
        changed: [.username],
        updatedAt: Date(timeIntervalSince1970: 1_790_000_000)
    )

    func consumed(_ record: KafkaRecord) -> KafkaMessage {
        KafkaMessage(topic: record.topic, partition: 0, offset: 7, key: record.key, value: record.value, headers: record.headers, timestamp: nil)
    }

    @Test func anEnvelopeSurvivesTheRoundTripThroughKafkaHeaders() throws {
        let envelope = try EventEnvelope(event, source: "/splash/auth")
        let record = envelope.record(topic: ProfileUpdated.topic.name)
        #expect(record.key == Array(event.aggregateID.utf8))
        let read = try EventEnvelope(consumed(record))
        #expect(read.id == envelope.id)
        #expect(read.type == "auth.profile.updated.v1")
        #expect(read.subject == event.aggregateID)
        #expect(abs(read.time.timeIntervalSince(envelope.time)) < 0.001)
        #expect(try read.decode(ProfileUpdated.self) == event)
    }

    @Test func aRecordWithoutItsAttributesIsRejectedByName() throws {
        var record = try EventEnvelope(event, source: "/splash/auth").record(topic: "auth.users")
        record.headers.removeAll { $0.name == "ce_id" }
        #expect(throws: EnvelopeError.missingAttribute("ce_id")) { try EventEnvelope(consumed(record)) }
    }

    @Test func theRegistryDecodesKnownTypesAndLeavesUnknownOnesAlone() throws {
        let registry = EventRegistry([ProfileUpdated.self])
        let envelope = try EventEnvelope(event, source: "/splash/auth")
        #expect(try registry.decode(envelope) as? ProfileUpdated == event)
        let other = try EventEnvelope(OnboardingCompleted(userId: UUID(), completedAt: Date()), source: "/splash/auth")
        #expect(try registry.decode(other) == nil)
        var wrong = envelope
        wrong.data = Array(#"{"userId": 3}"#.utf8)
        #expect(throws: DecodingError.self) { try registry.decode(wrong) }
    }

    @Test func deadLetterHeadersCarryTheOriginAndReplayRestoresTheRecord() throws {
        let original = consumed(try EventEnvelope(event, source: "/splash/auth").record(topic: "auth.users"))
        let letter = DeadLetter(original: original, error: "boom", attempts: 5)
        let parked = KafkaMessage(
            topic: "auth.users.dlq",
            partition: 0,
            offset: 0,
            key: letter.record.key,
            value: letter.record.value,
            headers: letter.record.headers,
            timestamp: nil
        )
        #expect(letter.record.topic == "auth.users.dlq")
        #expect(parked.headers[text: "x-original-offset"] == "7")
        let read = try #require(DeadLetter(deadLetterMessage: parked))
        #expect(read == letter)
        #expect(read.replayRecord == KafkaRecord(topic: "auth.users", key: original.key, value: original.value, headers: original.headers))
    }

    /// Event ids come from a pool of system randomness read 4 KiB at a time: version 4, RFC 9562's
    /// variant, and distinct over many refills.
    @Test func eventIdsAreRandomVersionFourUUIDs() throws {
        var seen = Set<UUID>()
        for _ in 0..<50_000 {
            let id = try EventEnvelope(ProbeEvent(key: "k", seq: 0), source: "/splash/test").id
            #expect(id.uuid.6 >> 4 == 4 && id.uuid.8 >> 6 == 0b10)
            seen.insert(id)
        }
        #expect(seen.count == 50_000)
        // Each of the 122 random bits is set in about half of them.
        let ones = seen.prefix(4_000).reduce(0) { $0 + (withUnsafeBytes(of: $1.uuid) { $0[0] } & 1 == 1 ? 1 : 0) }
        #expect((1_700...2_300).contains(ones))
    }

    @Test func backoffDoublesUpToItsCeiling() {
        let policy = RetryPolicy(attempts: 8, initialBackoff: .milliseconds(100), maximumBackoff: .milliseconds(700))
        #expect(
            (1...5).map(policy.backoff(after:)) == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(700), .milliseconds(700),
            ]
        )
    }
}
