import Contracts
import EventBus
import Foundation
import Identity
import NIOCore
import RealtimeWire
import TestSupport
import Testing

@testable import Gateway

/// The pieces of Supabase Realtime that need no socket: frames, filters, and the rows made from
/// domain events.
@Suite("Supabase Realtime pieces") struct SupabaseRealtimeUnitTests {
    @Test func framesReadInEitherShapeAndAreWrittenInTheConnectionsVersion() throws {
        let v2 = try PhoenixMessage(text: #"["3","4","realtime:a","phx_join",{"config":{}}]"#)
        let v1 = try PhoenixMessage(text: #"{"join_ref":"3","ref":4,"topic":"realtime:a","event":"phx_join","payload":{"config":{}}}"#)
        #expect(v1 == v2 && v2.ref == "4" && v2.joinRef == "3")
        #expect(
            PhoenixMessage(joinRef: nil, ref: nil, topic: "t", event: "e", payload: .object([:])).text(.v1)
                == #"{"event":"e","join_ref":null,"payload":{},"ref":null,"topic":"t"}"#
        )
        #expect(v2.text(.v2) == #"["3","4","realtime:a","phx_join",{"config":{}}]"#)
        for bad in ["", "[]", #"["1","2","t"]"#, #"{"event":"e"}"#, "nonsense", #"[1,2,3,4,5]"#] {
            #expect(throws: PhoenixMessage.Malformed.self) { try PhoenixMessage(text: bad) }
        }
    }

    /// supabase-js's user broadcast push, byte by byte: kind 3; the sizes of the join ref, ref,
    /// topic, user event and metadata; the payload's encoding (1: JSON); then each, then the payload.
    /// Frames are written without `JSONEncoder` now; what they say is byte for byte what it wrote.
    @Test func valuesAreWrittenAsTheEncoderWroteThem() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func encoded(_ value: some Encodable) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
        var random = SystemRandomNumberGenerator()
        let texts = ["", "plain", "a/b\\c\"d", "tab\tnew\nline\r\u{8}\u{c}", "\u{0}\u{1f}\u{7f}", "é ñ 北京 🎉", "Zebra", "apple", "_x", "Ä", "a b"]
        func value(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 2 ? 5 : 7), using: &random) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &random))
            case 2: return .int(Int.random(in: -1_000_000...1_000_000, using: &random))
            case 3: return .double([0.5, -2.25, 1e-7, 1e21, 60.17, 0.1 + 0.2].randomElement(using: &random)!)
            case 4: return .string(texts.randomElement(using: &random)!)
            case 5: return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in value(depth + 1) })
            default:
                let members = (0..<Int.random(in: 0...5, using: &random)).map { _ in (texts.randomElement(using: &random)!, value(depth + 1)) }
                return .object(Dictionary(members) { $1 })
            }
        }
        for _ in 0..<2_000 {
            let tree = value(0)
            #expect(PhoenixMessage.json(tree) == (try encoded(tree)))
        }
        for text in texts { #expect(PhoenixMessage.json(text) == (try encoded(text))) }
        #expect(PhoenixMessage.json([1, 22, -3]) == "[1,22,-3]" && PhoenixMessage.json([Int]()) == "[]")
    }

    @Test func aBinaryBroadcastIsReadAsSupabaseJsWritesIt() throws {
        let bytes: [UInt8] = [3, 1, 1, 14, 6, 12, 1] + Array(#"12realtime:room1cursor{"id":"abc"}{"x":3}"#.utf8)
        let push = try UserBroadcastFrame.decode(ByteBuffer(bytes: bytes))
        #expect(
            push
                == UserBroadcastFrame.Push(
                    joinRef: "1",
                    ref: "2",
                    topic: "realtime:room1",
                    broadcast: .user(event: "cursor", json: true, payload: Data(#"{"x":3}"#.utf8))
                )
        )
        let opaque = try UserBroadcastFrame.decode(ByteBuffer(bytes: [3, 0, 0, 1, 1, 0, 0] + Array("te".utf8) + [0xFF, 0x00]))
        #expect(
            opaque
                == UserBroadcastFrame.Push(
                    joinRef: nil,
                    ref: nil,
                    topic: "t",
                    broadcast: .user(event: "e", json: false, payload: Data([0xFF, 0x00]))
                )
        )

        let refused: [[UInt8]] = [
            [],  // nothing
            [0, 0, 0, 1, 1, 0] + Array("te".utf8),  // a push (kind 0), not a broadcast
            [3, 0, 0, 1],  // a header cut short
            [3, 0, 0, 9, 1, 0, 1] + Array("te".utf8),  // sizes past the end
            [3, 0, 0, 1, 1, 0, 2] + Array("te".utf8),  // an encoding that is neither 0 nor 1
            [3, 0, 0, 1, 1, 0, 1] + Array("te{x".utf8),  // "JSON" that is not
            [3, 0, 0, 1, 0, 0, 1] + Array("t{}".utf8),  // no event
            [3, 0, 0, 1, 1, 0, 1, 0x74, 0xC3] + Array("{}".utf8),  // an event that is not UTF-8
        ]
        for frame in refused {
            #expect(throws: UserBroadcastFrame.Malformed.self, "\(frame)") { try UserBroadcastFrame.decode(ByteBuffer(bytes: frame)) }
        }
    }

    /// What supabase-js reads back (kind 4): the sizes of the topic, user event and metadata, the
    /// encoding, then each and the payload; a 1.0.0 client gets the text form when the payload
    /// is JSON, and nothing when it is opaque bytes.
    @Test func aBinaryBroadcastGoesToEachVersionInTheFormItReads() throws {
        let json = Broadcast.user(event: "cursor", json: true, payload: Data(#"{"x":3}"#.utf8))
        guard case .binary(let frame)? = json.frame(for: .v2, topic: "realtime:room1", joinRef: "1") else {
            Issue.record("a 2.0.0 client gets a binary frame")
            return
        }
        #expect(Array(frame.readableBytesView) == [4, 14, 6, 0, 1] + Array(#"realtime:room1cursor{"x":3}"#.utf8))
        guard case .text(let converted)? = json.frame(for: .v1, topic: "realtime:room1", joinRef: "1") else {
            Issue.record("a 1.0.0 client gets the text form")
            return
        }
        #expect(
            try PhoenixMessage(text: converted)
                == PhoenixMessage(
                    joinRef: "1",
                    ref: nil,
                    topic: "realtime:room1",
                    event: "broadcast",
                    payload: .object(["type": "broadcast", "event": "cursor", "payload": .object(["x": .int(3)])])
                )
        )
        let opaque = Broadcast.user(event: "blob", json: false, payload: Data([1, 2, 3]))
        #expect(opaque.frame(for: .v1, topic: "realtime:room1", joinRef: "1") == nil)
        guard case .binary(let bytes)? = opaque.frame(for: .v2, topic: "realtime:room1", joinRef: "1") else {
            Issue.record("a 2.0.0 client gets opaque bytes as they came")
            return
        }
        #expect(Array(bytes.readableBytesView) == [4, 14, 4, 0, 0] + Array("realtime:room1blob".utf8) + [1, 2, 3])
        // A text broadcast stays text in both versions.
        let text = Broadcast.text(.object(["type": "broadcast", "event": "wave", "payload": .object([:])]))
        guard case .text(let v2)? = text.frame(for: .v2, topic: "realtime:room1", joinRef: "7") else {
            Issue.record("a text broadcast is text")
            return
        }
        #expect(v2 == #"["7",null,"realtime:room1","broadcast",{"event":"wave","payload":{},"type":"broadcast"}]"#)
    }

    @Test func filtersMatchAsPostgRESTWouldAndRefuseWhatTheyCannotRead() throws {
        let id = UUID()
        let row: [String: JSONValue] = ["id": .string(id.uuidString.lowercased()), "version": .int(7), "status": .string("accepted"), "note": .null]
        let cases: [(String, Bool)] = [
            ("id=eq.\(id.uuidString)", true), ("id=neq.\(id.uuidString)", false), ("version=gt.6", true), ("version=gte.8", false),
            ("version=lt.10", true), ("version=lte.7", true), ("status=in.(placed,accepted)", true), (#"status=in.("a,b",c)"#, false),
            ("note=eq.null", false), ("missing=eq.1", false), ("status=eq.accepted", true),
        ]
        for (text, expected) in cases { #expect(try ChangeFilter(text).matches(row) == expected, "\(text)") }
        #expect(try ChangeFilter(#"status=in.("a,b",c)"#).values == ["a,b", "c"])
        for bad in ["status", "status=like.a*", "status=in.a,b", "=eq.1", "st;atus=eq.1"] {
            #expect(throws: ChangeFilter.Invalid.self) { try ChangeFilter(bad) }
        }
    }

    @Test func rowsFromEventsCarryTheKeyWhatChangedAndWhoMaySeeThem() throws {
        var examples = EventExamples()
        func envelope(_ event: some DomainEvent) throws -> EventEnvelope { try EventEnvelope(event, source: "/splash/test") }
        let unliked = try #require(try TableChange(envelope(try examples.example(PhotoUnliked.self))))
        #expect(unliked.table == "likes" && unliked.kind == .delete && unliked.record.isEmpty)
        #expect(Set(unliked.oldRecord.keys) == ["user_id", "photo_key"] && Set(unliked.columns.map(\.name)) == ["user_id", "photo_key"])
        let owner = unliked.oldRecord["user_id"]?.stringValue
        #expect(unliked.isVisible(to: nil) == false)

        let moved = try examples.example(OrderStatusChanged.self)
        let order = try #require(try TableChange(envelope(moved)))
        #expect(order.table == "orders" && order.kind == .update && order.record["status"] == .string(moved.status.rawValue))
        #expect(order.record["version"] == .int(moved.version) && order.oldRecord == ["id": .string(moved.orderId.lowercased)])
        #expect(owner == moved.parties.customerId.lowercased, "one user across the examples")

        let renamed = try #require(try TableChange(envelope(try examples.example(ProfileUpdated.self))))
        #expect(renamed.isVisible(to: nil) && renamed.record["email"] == nil)
        // v1 twins and positions are not rows.
        #expect(try TableChange(envelope(try examples.example(OrderStatusChangedV1.self))) == nil)
        #expect(try TableChange(envelope(try examples.example(DriverLocationUpdated.self))) == nil)
        let data = try #require(try JSONSerialization.jsonObject(with: Data(order.dataJSON.utf8)) as? [String: Any])
        #expect(Set(data.keys) == ["schema", "table", "type", "commit_timestamp", "columns", "record", "old_record", "errors", "event_id"])
    }
}
