@testable import Gateway
import Contracts
import EventBus
import Foundation
import Identity
import Testing
import TestSupport

/// The pieces of Supabase Realtime that need no socket: frames, filters, and the rows made from
/// domain events.
@Suite("Supabase Realtime pieces") struct SupabaseRealtimeUnitTests {
    @Test func framesReadInEitherShapeAndAreWrittenInTheConnectionsVersion() throws {
        let v2 = try PhoenixMessage(text: #"["3","4","realtime:a","phx_join",{"config":{}}]"#)
        let v1 = try PhoenixMessage(text: #"{"join_ref":"3","ref":4,"topic":"realtime:a","event":"phx_join","payload":{"config":{}}}"#)
        #expect(v1 == v2 && v2.ref == "4" && v2.joinRef == "3")
        #expect(PhoenixMessage(joinRef: nil, ref: nil, topic: "t", event: "e", payload: .object([:])).text(.v1) == #"{"event":"e","join_ref":null,"payload":{},"ref":null,"topic":"t"}"#)
        #expect(v2.text(.v2) == #"["3","4","realtime:a","phx_join",{"config":{}}]"#)
        for bad in ["", "[]", #"["1","2","t"]"#, #"{"event":"e"}"#, "nonsense", #"[1,2,3,4,5]"#] {
            #expect(throws: PhoenixMessage.Malformed.self) { try PhoenixMessage(text: bad) }
        }
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
