import Contracts
import Foundation
import TestSupport
import Testing

/// What the gateway answers itself against `Services/Gateway/openapi.yaml`.
/// `make contract SERVICE=gateway` runs this suite alone.
@Suite("gateway contract")
struct ContractTests {
    /// Every operation without a token, then the event stream's refusals with one: a stream the
    /// gateway accepts does not end, so only requests the document says are invalid are sent
    /// with a token (RealtimeTests test the stream).
    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        try await GatewayHarness.with { gateway in
            // As a deployment would: traffic once /readyz says so (its 503 before is a server error to schemathesis).
            try await eventually("the gateway ready") { try await gateway.get("/readyz").status == 200 }
            let anonymous = try await Schemathesis(service: "Gateway", baseURL: gateway.app.baseURL, stateful: false).run()
            #expect(anonymous.passed, "\(anonymous)")
            let refusals = try await Schemathesis(
                service: "Gateway",
                baseURL: gateway.app.baseURL,
                headers: [("Authorization", "Bearer \(try gateway.token())")],
                includePaths: ["^/v1/events$"],
                stateful: false,
                mode: "negative"
            ).run()
            #expect(refusals.passed, "\(refusals)")
        }
    }
}

extension ContractTests {
    /// Every type the gateway pushes, replayed from its schema's example (fresh ids, one user who
    /// is the author of them all and the order's customer), reaches that user as documented: on
    /// `me`, and a driver's position on `orders:{id}`, with its payload as published. Types it
    /// does not push (tracking's v1 twins, restaurant changes: Supabase Realtime's only) are passed
    /// over on the way, and `render.jobs` and the erasure topics are not read.
    @Test func everyEventItPushesReachesItsSubscriberFromItsSchemasExample() async throws {
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            var examples = EventExamples()
            func example<Event: DomainEvent>(_ type: Event.Type) throws -> any DomainEvent { try examples.example(type) }
            // A deletion closes its user's connections instead (EdgeAuthTests follow it).
            let events = try EventCatalog.all.filter { $0.type != UserDeleted.type }.map { try example($0) }
            let placed = try #require(events.compactMap { $0 as? OrderPlaced }.first)
            let user = placed.parties.customerId
            let socket = RealtimeSocket(url: gateway.webSocketURL + "?channels=me", token: try gateway.token(user: user))
            defer { Task { await socket.disconnect() } }
            _ = try await socket.message { $0["op"] as? String == "subscribed" && $0["channel"] as? String == "me" }

            let location = try #require(events.compactMap { $0 as? DriverLocationUpdated }.first)
            let notPushed = Set(
                [
                    OrderPlacedV1.type, OrderStatusChangedV1.type, DriverAssignedV1.type, DriverLocationUpdatedV1.type, EditRequested.type,
                    RestaurantChanged.type,
                ] + Erasures.all.map { $0.type }
            )
            // The v1 twins first: the v2 events behind them on the order's partition still come.
            let published =
                events.filter { notPushed.contains(type(of: $0).type) }
                + events.filter { !notPushed.contains(type(of: $0).type) && !($0 is DriverLocationUpdated) }
            try await TestKafka.shared.publish(published, source: "/splash/contract")
            for event in published where !notPushed.contains(type(of: event).type) {
                let pushed = try await socket.message { $0["type"] as? String == type(of: event).type }
                #expect(pushed["channel"] as? String == "me", "\(type(of: event).type)")
                #expect(try Self.sameJSON(pushed["data"], event), "\(type(of: event).type): \(pushed)")
            }
            #expect(!socket.messages.contains { message in notPushed.contains { message.contains("\"\($0)\"") } })

            // The order is known now: its customer follows it and sees the car.
            try await socket.send(#"{"op":"subscribe","channel":"orders:\#(placed.orderId.lowercased)","ref":"o"}"#)
            _ = try await socket.message { $0["op"] as? String == "subscribed" && $0["ref"] as? String == "o" }
            try await TestKafka.shared.publish([location], source: "/splash/contract")
            let car = try await socket.message { $0["type"] as? String == DriverLocationUpdated.type }
            #expect(car["channel"] as? String == "orders:\(placed.orderId.lowercased)")
            #expect(try Self.sameJSON(car["data"], location))
        }
    }

    private static func sameJSON(_ pushed: Any?, _ event: any DomainEvent) throws -> Bool {
        let written = try JSONSerialization.jsonObject(with: try EventJSON.encoder.encode(event)) as? NSDictionary
        return (pushed as? NSDictionary).map { $0 == written } ?? false
    }
}
