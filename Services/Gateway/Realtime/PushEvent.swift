import Contracts
import EventBus
import Foundation
import Identity
import RealtimeWire
import ServiceKit

/// A domain event on its way to realtime clients: the channels that carry it, and the CloudEvents
/// structured JSON each of them sends, rendered only for a channel someone follows (an order's
/// event names four channels; most have nobody on them).
struct PushEvent: Sendable {
    /// The CloudEvent `id`; SSE clients resume after it (`Last-Event-ID`).
    let id: String
    let type: String
    /// Set for events a slow client may miss as long as it gets a newer one with the same key
    /// (driver positions, keyed by driver and order); `nil` for events never dropped.
    let supersedingKey: String?
    /// The channels that carry it.
    let channels: [RealtimeChannel]
    /// When the gateway read it from Kafka, to measure delivery.
    let receivedAt: ContinuousClock.Instant
    private let source: String
    private let time: String
    private let subject: String?
    /// The payload as JSON text on one line.
    private let data: [UInt8]

    /// Takes the event for the channels of its `audience`. The payload goes out as it came when it
    /// was read as its type (so it is JSON) and it is on one line (an SSE `data:` line); otherwise
    /// it is read and written again.
    /// - Throws: `DecodingError` when the payload is not JSON.
    init(_ payload: EventPayload, audience: Audience, receivedAt: ContinuousClock.Instant = .now) throws {
        let envelope = payload.envelope
        self.id = envelope.id.lowercased
        self.type = envelope.type
        self.supersedingKey = audience.supersedingKey
        self.channels = audience.channels
        self.receivedAt = receivedAt
        self.source = envelope.source
        self.time = EventJSON.formatTimestamp(envelope.time)
        self.subject = envelope.subject
        if payload.wasRead, !envelope.data.contains(where: { $0 == 0x0A || $0 == 0x0D }) {
            self.data = envelope.data
        } else {
            var writer = JSONWriter(capacity: envelope.data.count)
            writer.value(try JSONDecoder().decode(JSONValue.self, from: Data(envelope.data)))
            self.data = writer.bytes
        }
    }

    /// The queue frame carrying `text`, one of this event's renderings.
    func frame(_ text: String, enqueuedAt: ContinuousClock.Instant) -> ClientQueue.Frame {
        ClientQueue.Frame(eventID: id, eventType: type, text: text, supersedingKey: supersedingKey, enqueuedAt: enqueuedAt)
    }

    /// CloudEvents 1.0 structured JSON, with the `channel` extension attribute naming the
    /// subscription that carried it: keys sorted and slashes unescaped, as `JSONEncoder` wrote it.
    func text(for channel: RealtimeChannel) -> String {
        var writer = JSONWriter(capacity: data.count + 384)
        writer.object { writer in
            writer.key("channel")
            writer.string(channel.description)
            writer.key("data")
            writer.json(data)
            writer.key("datacontenttype")
            writer.string(EventEnvelope.contentType)
            writer.key("id")
            writer.string(id)
            writer.key("source")
            writer.string(source)
            writer.key("specversion")
            writer.string(EventEnvelope.specVersion)
            if let subject {
                writer.key("subject")
                writer.string(subject)
            }
            writer.key("time")
            writer.string(time)
            writer.key("type")
            writer.string(type)
        }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
