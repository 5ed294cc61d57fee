import Contracts
import EventBus
import Foundation
import Identity
import RealtimeWire

/// A domain event on its way to realtime clients: the channels that carry it and the CloudEvents
/// structured JSON each of them sends.
struct PushEvent: Sendable {
    /// The CloudEvent `id`; SSE clients resume after it (`Last-Event-ID`).
    let id: String
    let type: String
    /// Set for events a slow client may miss as long as it gets a newer one with the same key
    /// (driver positions, keyed by driver and order); `nil` for events never dropped.
    let supersedingKey: String?
    /// The text frame per channel, rendered once however many clients receive it.
    let frames: [(channel: RealtimeChannel, text: String)]
    /// When the gateway read it from Kafka, to measure delivery.
    let receivedAt: ContinuousClock.Instant

    /// Renders `envelope` for each channel of its `audience`.
    /// - Throws: `DecodingError` when the payload is not JSON.
    init(_ envelope: EventEnvelope, audience: Audience, receivedAt: ContinuousClock.Instant = .now) throws {
        let id = envelope.id.uuidString.lowercased()
        self.id = id
        self.type = envelope.type
        self.supersedingKey = audience.supersedingKey
        self.receivedAt = receivedAt
        let data = try JSONDecoder().decode(JSONValue.self, from: Data(envelope.data))
        self.frames = try audience.channels.map { channel in
            (channel, try Self.render(envelope, id: id, channel: channel, data: data))
        }
    }

    /// The queue frame carrying `text`, one of this event's renderings.
    func frame(_ text: String, enqueuedAt: ContinuousClock.Instant) -> ClientQueue.Frame {
        ClientQueue.Frame(eventID: id, eventType: type, text: text, supersedingKey: supersedingKey, enqueuedAt: enqueuedAt)
    }

    /// CloudEvents 1.0 structured JSON, with the `channel` extension attribute naming the
    /// subscription that carried it.
    static func render(_ envelope: EventEnvelope, id: String, channel: RealtimeChannel, data: JSONValue) throws -> String {
        struct Structured: Encodable {
            let specversion: String
            let id: String
            let source: String
            let type: String
            let time: String
            let subject: String?
            let datacontenttype: String
            let channel: String
            let data: JSONValue
        }
        let structured = Structured(
            specversion: EventEnvelope.specVersion,
            id: id,
            source: envelope.source,
            type: envelope.type,
            time: EventJSON.formatTimestamp(envelope.time),
            subject: envelope.subject,
            datacontenttype: EventEnvelope.contentType,
            channel: channel.description,
            data: data
        )
        return String(decoding: try encoder.encode(structured), as: UTF8.self)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
