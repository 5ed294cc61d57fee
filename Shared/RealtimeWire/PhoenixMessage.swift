import Contracts
import Foundation
import Identity

/// One message of the Phoenix channels protocol that Supabase Realtime speaks, in either of its
/// serialisations (the `vsn` query parameter): 1.0.0 sends JSON objects that always carry all five
/// keys, `{"topic","event","payload","ref","join_ref"}` (realtime-py drops a frame without `ref`,
/// so a server push carries `"ref":null`); 2.0.0 sends arrays, `[join_ref, ref, topic, event,
/// payload]`.
package struct PhoenixMessage: Sendable, Equatable {
    package enum Version: String, Sendable {
        case v1 = "1.0.0"
        case v2 = "2.0.0"
    }

    package var joinRef: String?
    package var ref: String?
    package var topic: String
    package var event: String
    package var payload: JSONValue

    package struct Malformed: Error {}

    /// Reads a client's text frame; either shape is accepted whatever the connection's version.
    package init(text: String) throws(Malformed) {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else { throw Malformed() }
        switch value {
        case .array(let parts) where parts.count == 5:
            guard let topic = parts[2].stringValue, let event = parts[3].stringValue else { throw Malformed() }
            self.init(joinRef: Self.reference(parts[0]), ref: Self.reference(parts[1]), topic: topic, event: event, payload: parts[4])
        case .object(let fields):
            guard let topic = fields["topic"]?.stringValue, let event = fields["event"]?.stringValue else { throw Malformed() }
            self.init(
                joinRef: fields["join_ref"].flatMap(Self.reference),
                ref: fields["ref"].flatMap(Self.reference),
                topic: topic,
                event: event,
                payload: fields["payload"] ?? .object([:])
            )
        default:
            throw Malformed()
        }
    }

    package init(joinRef: String?, ref: String?, topic: String, event: String, payload: JSONValue) {
        self.joinRef = joinRef
        self.ref = ref
        self.topic = topic
        self.event = event
        self.payload = payload
    }

    /// The frame's text in `version`'s shape.
    package func text(_ version: Version) -> String {
        Self.text(version, joinRef: joinRef, ref: ref, topic: topic, event: event, payloadJSON: Self.json(payload))
    }

    /// A frame whose payload is already JSON text (a change rendered once for many clients).
    package static func text(_ version: Version, joinRef: String?, ref: String?, topic: String, event: String, payloadJSON: String) -> String {
        let joinRef = joinRef.map(json) ?? "null"
        let ref = ref.map(json) ?? "null"
        switch version {
        case .v1:
            return #"{"event":\#(json(event)),"join_ref":\#(joinRef),"payload":\#(payloadJSON),"ref":\#(ref),"topic":\#(json(topic))}"#
        case .v2:
            return "[\(joinRef),\(ref),\(json(topic)),\(json(event)),\(payloadJSON)]"
        }
    }

    /// A reference as clients send it: a string, though a number is read too.
    private static func reference(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .int(let number): String(number)
        default: nil
        }
    }

    // Frames' JSON is written by `JSONWriter`, byte for byte what `JSONEncoder` writes with sorted
    // keys and unescaped slashes, without its intermediate tree: a frame has four strings (topic,
    // event, refs), and a change's frame is made once per client.

    /// A string's JSON.
    package static func json(_ value: String) -> String {
        var writer = JSONWriter(capacity: value.utf8.count + 8)
        writer.string(value)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// A value's JSON.
    package static func json(_ value: JSONValue) -> String {
        var writer = JSONWriter(capacity: 512)
        writer.value(value)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Numbers' JSON (a change's binding ids).
    package static func json(_ values: [Int]) -> String {
        var writer = JSONWriter(capacity: 8 * values.count + 2)
        writer.array(values) { $0.integer($1) }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
