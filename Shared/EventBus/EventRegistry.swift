import Contracts
import Foundation

/// The event types a consumer understands, by `ce_type`; decodes envelopes into typed values.
public struct EventRegistry: Sendable {
    private var decoders: [String: @Sendable (EventEnvelope) throws -> any DomainEvent] = [:]

    public init(_ types: [any DomainEvent.Type] = []) {
        for type in types { register(type) }
    }

    public mutating func register<Event: DomainEvent>(_ type: Event.Type) {
        decoders[Event.type] = { envelope in try envelope.decode(Event.self) }
    }

    /// The typed event, or `nil` when the type is unknown here (consumers skip those).
    /// - Throws: `DecodingError` when a known type's payload does not match it.
    public func decode(_ envelope: EventEnvelope) throws -> (any DomainEvent)? {
        guard let decoder = decoders[envelope.type] else { return nil }
        return try decoder(envelope)
    }
}

/// An event as a handler receives it: the typed value, its envelope and where it was read.
public struct ReceivedEvent: Sendable {
    public var event: any DomainEvent
    public var envelope: EventEnvelope
    public var topic: String
    public var partition: Int32
    public var offset: Int64

    public init(event: any DomainEvent, envelope: EventEnvelope, topic: String, partition: Int32, offset: Int64) {
        self.event = event
        self.envelope = envelope
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}
