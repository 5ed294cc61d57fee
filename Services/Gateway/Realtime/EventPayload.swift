import Contracts
import EventBus

/// An event's envelope, with its payload read as its type at most once: the feed asks twice for
/// each event (its table change, its audience), and reading the JSON (its UUIDs parsed by
/// `sscanf`) was the largest single cost of a change on its way to the sockets.
final class EventPayload {
    let envelope: EventEnvelope
    private var read: (any DomainEvent)?

    init(_ envelope: EventEnvelope) {
        self.envelope = envelope
    }

    /// Whether the payload has been read as its type (so it is JSON).
    var wasRead: Bool { read != nil }

    /// The payload as `Event`, read on the first call.
    /// - Throws: `DecodingError` when the payload does not match its type.
    func decode<Event: DomainEvent>(_: Event.Type) throws -> Event {
        if let read = read as? Event { return read }
        let event = try envelope.decode(Event.self)
        read = event
        return event
    }
}
