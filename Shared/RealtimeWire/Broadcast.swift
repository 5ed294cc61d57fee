import Foundation
import Identity
import NIOCore

/// A broadcast from one client of a channel to the others, in the form it was sent in.
///
/// A 1.0.0 client, realtime-py and supabase-swift send a text frame whose payload is
/// `{"type":"broadcast","event":…,"payload":…}`. supabase-js (vsn 2.0.0) sends a binary "user
/// broadcast push" (kind 3): the user event, and a payload that is JSON text or opaque bytes.
/// Each subscriber gets the broadcast in the form its version reads: text as text; a user
/// broadcast as a binary "user broadcast" (kind 4) to 2.0.0 clients, and as the text form to
/// 1.0.0 clients when its payload is JSON (an opaque payload cannot be said in 1.0.0's JSON, so
/// those clients are passed over, as Supabase's server does).
package enum Broadcast: Sendable, Equatable, Codable {
    /// A text frame's payload, passed on as it came.
    case text(JSONValue)
    /// A binary user broadcast: its event, and its payload's bytes (JSON text when `json`).
    case user(event: String, json: Bool, payload: Data)

    /// The frame for a client of `version` joined on `topic` with `joinRef`; nil when this
    /// broadcast cannot be said in that version.
    package func frame(for version: PhoenixMessage.Version, topic: String, joinRef: String?) -> ClientQueue.Frame.Content? {
        switch (self, version) {
        case (.user(let event, let json, let payload), .v2):
            return .binary(UserBroadcastFrame.encode(topic: topic, event: event, json: json, payload: payload))
        case (.user, .v1), (.text, _):
            guard let payload = textPayload else { return nil }
            return .text(
                PhoenixMessage.text(version, joinRef: joinRef, ref: nil, topic: topic, event: "broadcast", payloadJSON: PhoenixMessage.json(payload))
            )
        }
    }

    /// The text form's payload, `{"type":"broadcast","event":…,"payload":…}`; nil for a user
    /// broadcast whose payload is not JSON.
    package var textPayload: JSONValue? {
        switch self {
        case .text(let payload):
            return payload
        case .user(let event, let json, let payload):
            guard json, let value = try? JSONDecoder().decode(JSONValue.self, from: payload) else { return nil }
            return .object(["type": .string("broadcast"), "event": .string(event), "payload": value])
        }
    }
}

/// The binary frames of Supabase Realtime's 2.0.0 serialiser that carry user broadcasts.
///
/// From a client, kind 3: `[3, joinRefSize, refSize, topicSize, eventSize, metadataSize,
/// encoding]`, then the join ref, ref, topic, user event and metadata (JSON, unused here), then the
/// payload to the frame's end. To a client, kind 4: `[4, topicSize, eventSize, metadataSize,
/// encoding]`, then the topic, user event and metadata, then the payload. Sizes are one byte each;
/// encoding 0 is opaque bytes, 1 JSON text.
package enum UserBroadcastFrame {
    package static let pushKind: UInt8 = 3
    package static let broadcastKind: UInt8 = 4

    /// A kind 3 frame as read.
    package struct Push: Sendable, Equatable {
        package var joinRef: String?
        package var ref: String?
        package var topic: String
        package var broadcast: Broadcast

        package init(joinRef: String?, ref: String?, topic: String, broadcast: Broadcast) {
            self.joinRef = joinRef
            self.ref = ref
            self.topic = topic
            self.broadcast = broadcast
        }
    }

    package struct Malformed: Error, Equatable {
        package let reason: String
    }

    /// Reads a client's binary frame.
    /// - Throws: `Malformed` for any other kind, a header that does not fit the frame, text that
    ///   is not UTF-8, an unknown encoding or a JSON payload that does not parse.
    package static func decode(_ frame: ByteBuffer) throws(Malformed) -> Push {
        var bytes = frame
        guard let kind = bytes.readInteger(as: UInt8.self) else { throw Malformed(reason: "an empty binary frame") }
        guard kind == pushKind else { throw Malformed(reason: "binary frames of kind \(kind) are not read here; a broadcast is kind 3") }
        guard let sizes = bytes.readBytes(length: 6) else { throw Malformed(reason: "a binary broadcast's header is 7 bytes") }
        let encoding = sizes[5]
        guard encoding <= 1 else { throw Malformed(reason: "a broadcast's payload encoding is 0 (binary) or 1 (JSON)") }
        var texts: [String] = []
        for size in sizes[0..<5] {
            guard let slice = bytes.readBytes(length: Int(size)) else {
                throw Malformed(reason: "a binary broadcast's header names more bytes than it carries")
            }
            guard let text = String(validating: slice, as: UTF8.self) else {
                throw Malformed(reason: "a binary broadcast's topic, event and refs are UTF-8")
            }
            texts.append(text)
        }
        let payload = Data(bytes.readableBytesView)
        if encoding == 1, (try? JSONDecoder().decode(JSONValue.self, from: payload)) == nil {
            throw Malformed(reason: "a broadcast whose encoding is JSON carries JSON")
        }
        guard !texts[3].isEmpty else { throw Malformed(reason: "a broadcast names its event") }
        return Push(
            joinRef: texts[0].isEmpty ? nil : texts[0],
            ref: texts[1].isEmpty ? nil : texts[1],
            topic: texts[2],
            broadcast: .user(event: texts[3], json: encoding == 1, payload: payload)
        )
    }

    /// A kind 4 frame (no metadata). The topic and event came in a kind 3 frame, so each fits in
    /// its one-byte size.
    package static func encode(topic: String, event: String, json: Bool, payload: Data) -> ByteBuffer {
        let topic = Array(topic.utf8.prefix(255))
        let event = Array(event.utf8.prefix(255))
        var frame = ByteBuffer()
        frame.reserveCapacity(5 + topic.count + event.count + payload.count)
        frame.writeBytes([broadcastKind, UInt8(topic.count), UInt8(event.count), 0, json ? 1 : 0])
        frame.writeBytes(topic)
        frame.writeBytes(event)
        frame.writeBytes(payload)
        return frame
    }
}
