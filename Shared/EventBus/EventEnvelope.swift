import Contracts
import Foundation
import Kafka

/// A CloudEvents 1.0 event in the Kafka protocol binding's binary mode: the record value is the
/// JSON payload and the attributes travel as headers (`ce_specversion`, `ce_id`, `ce_source`,
/// `ce_type`, `ce_time`, `ce_subject`, `content-type`). The record key is the aggregate id.
public struct EventEnvelope: Sendable, Equatable {
    public static let specVersion = "1.0"
    public static let contentType = "application/json"

    /// Unique per event; consumers deduplicate by it.
    public var id: UUID
    /// The publishing service, as a URI reference: `/splash/auth`.
    public var source: String
    public var type: String
    public var time: Date
    public var subject: String?
    /// The Kafka key: the aggregate id.
    public var key: String
    /// The JSON payload.
    public var data: [UInt8]

    public init(id: UUID, source: String, type: String, time: Date, subject: String?, key: String, data: [UInt8]) {
        self.id = id
        self.source = source
        self.type = type
        self.time = time
        self.subject = subject
        self.key = key
        self.data = data
    }

    /// Wraps `event`, encoding its payload with `EventJSON` (or writing it directly, the same
    /// bytes, for an event that is `JSONWritable`). Its id is a random UUID unless one is given.
    /// - Throws: `EncodingError` if the payload does not encode.
    public init<Event: DomainEvent>(_ event: Event, source: String, id: UUID? = nil, time: Date = Date(), subject: String? = nil) throws {
        let data = try (event as? any JSONWritable)?.jsonBytes ?? Array(EventJSON.encoder.encode(event))
        self.init(
            id: id ?? RandomUUIDs.next(),
            source: source,
            type: Event.type,
            time: time,
            subject: subject ?? event.aggregateID,
            key: event.aggregateID,
            data: data
        )
    }

    /// The record to publish on `topic`.
    public func record(topic: String) -> KafkaRecord {
        var headers = [
            KafkaHeader("ce_specversion", Self.specVersion),
            KafkaHeader("ce_id", id.lowercased),
            KafkaHeader("ce_source", source),
            KafkaHeader("ce_type", type),
            KafkaHeader("ce_time", EventJSON.formatTimestamp(time)),
            KafkaHeader("content-type", Self.contentType),
        ]
        if let subject { headers.append(KafkaHeader("ce_subject", subject)) }
        return KafkaRecord(topic: topic, key: key, value: data, headers: headers)
    }

    /// Reads the envelope of a consumed record.
    /// - Throws: `EnvelopeError` naming the missing or malformed attribute.
    public init(_ message: KafkaMessage) throws(EnvelopeError) {
        let headers = message.headers
        func required(_ name: String) throws(EnvelopeError) -> String {
            guard let value = headers[text: name], !value.isEmpty else { throw EnvelopeError.missingAttribute(name) }
            return value
        }
        guard try required("ce_specversion") == Self.specVersion else {
            throw EnvelopeError.malformedAttribute("ce_specversion", headers[text: "ce_specversion"] ?? "")
        }
        let idText = try required("ce_id")
        guard let id = UUID(uuidString: idText) else { throw EnvelopeError.malformedAttribute("ce_id", idText) }
        let timeText = try required("ce_time")
        guard let time = EventJSON.parseTimestamp(timeText) else { throw EnvelopeError.malformedAttribute("ce_time", timeText) }
        if let contentType = headers[text: "content-type"], !contentType.hasPrefix(Self.contentType) {
            throw EnvelopeError.malformedAttribute("content-type", contentType)
        }
        self.init(
            id: id,
            source: try required("ce_source"),
            type: try required("ce_type"),
            time: time,
            subject: headers[text: "ce_subject"],
            key: message.keyText ?? "",
            data: message.value
        )
    }

    /// The payload decoded as `Event`.
    /// - Throws: `DecodingError` when it does not match.
    public func decode<Event: DomainEvent>(_: Event.Type) throws -> Event {
        try EventJSON.decoder.decode(Event.self, from: Data(data))
    }
}

/// A record that is not a CloudEvent we can read.
public enum EnvelopeError: Error, Equatable, CustomStringConvertible {
    case missingAttribute(String)
    case malformedAttribute(String, String)

    public var description: String {
        switch self {
        case .missingAttribute(let name): "the record has no \(name) header"
        case .malformedAttribute(let name, let value): "the record's \(name) header is malformed: \(value)"
        }
    }
}
