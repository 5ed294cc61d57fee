import Contracts
import Foundation
import LocalStack
import TestSupport
import Testing
import Yams

/// The event contracts in Shared/Contracts: a schema and an example per type, an AsyncAPI document
/// that agrees with the topic catalog, and Swift types whose JSON the schemas accept — all checked
/// by a real JSON Schema validator (Python's jsonschema, installed by `make deps`).
@Suite struct EventContractTests {
    static let contracts = OpenAPIDocument.root.appendingPathComponent("Shared/Contracts")
    static let schemas = EventSchemaCheck.schemas
    static let python = URL(fileURLWithPath: "/usr/bin/python3")

    func validate(_ payloads: URL) async throws -> String {
        try await EventSchemaCheck.validate(folder: payloads)
    }

    @Test func everyEventTypeHasASchemaAndAnExample() throws {
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: Self.schemas.path))
        let types = EventCatalog.all.map { $0.type }
        #expect(Set(types).count == types.count)
        for type in types {
            #expect(files.contains("\(type).schema.json"), "missing schema for \(type)")
            #expect(files.contains("\(type).example.json"), "missing example for \(type)")
        }
        #expect(files.count == types.count * 2, "schemas without a Swift type: \(files)")
    }

    @Test func everyExampleValidatesAgainstItsSchema() async throws {
        let output = try await validate(Self.schemas)
        #expect(output.contains("validated \(EventCatalog.all.count) payload(s), 0 failure(s)"), "\(output)")
    }

    @Test func theSwiftTypesEncodeToJSONTheSchemasAccept() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("encoded-events-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for type in EventCatalog.all {
            let example = try Data(contentsOf: Self.schemas.appendingPathComponent("\(type.type).example.json"))
            // Decode the example into the Swift type and encode it again: what services publish.
            let encoded = try reencode(type, example)
            try encoded.write(to: folder.appendingPathComponent("\(type.type).json"))
        }
        let output = try await validate(folder)
        #expect(output.contains("validated \(EventCatalog.all.count) payload(s), 0 failure(s)"), "\(output)")
    }

    @Test func theValidatorRejectsAPayloadThatBreaksTheSchema() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("broken-events-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(#"{"userId": "not-a-uuid", "changed": [], "updatedAt": "yesterday"}"#.utf8)
            .write(to: folder.appendingPathComponent("auth.profile.updated.v1.json"))
        await #expect(throws: ProcessCommand.Failure.self) { try await validate(folder) }
    }

    @Test func anUpperCaseIdIsRefusedWhereTheSchemaSaysUUID() async throws {
        // Ids are RFC 9562's lower-case form everywhere: keys, subjects, rows, HTTP answers and
        // payloads. An example with one id upper-cased, and nothing else changed, fails.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("upper-case-ids-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let example = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: Self.schemas.appendingPathComponent("auth.profile.updated.v1.example.json")))
                as? [String: Any]
        )
        var upper = example
        upper["userId"] = try #require(example["userId"] as? String).uppercased()
        try JSONSerialization.data(withJSONObject: upper).write(to: folder.appendingPathComponent("auth.profile.updated.v1.json"))
        await #expect(throws: ProcessCommand.Failure.self) { try await validate(folder) }
    }

    @Test func theAsyncAPIDocumentDescribesEveryTopicAndEventType() throws {
        let text = try String(contentsOf: Self.contracts.appendingPathComponent("asyncapi.yaml"), encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect(document["asyncapi"] as? String == "3.0.0")
        let channels = try #require(document["channels"] as? [String: [String: Any]])
        let addresses = Set(channels.values.compactMap { $0["address"] as? String })
        #expect(addresses == Set(TopicCatalog.eventTopics.map(\.name)))
        let components = try #require(document["components"] as? [String: Any])
        let messages = try #require(components["messages"] as? [String: [String: Any]])
        #expect(Set(messages.values.compactMap { $0["name"] as? String }) == Set(EventCatalog.all.map { $0.type }))
        for type in EventCatalog.all {
            let message = try #require(messages.values.first { $0["name"] as? String == type.type })
            let channel = try #require(channels.values.first { $0["address"] as? String == type.topic.name })
            let channelMessages = try #require(channel["messages"] as? [String: Any])
            #expect(
                channelMessages.keys.contains {
                    text.contains("name: \(type.type)")
                        && $0 == type.type.replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_")
                }
            )
            let traits = try #require(message["traits"] as? [[String: Any]])
            #expect(traits.first?["$ref"] as? String == "#/components/messageTraits/cloudEventsBinary")
        }
        let traits = try #require(components["messageTraits"] as? [String: [String: Any]])
        let headers = try #require((traits["cloudEventsBinary"]?["headers"] as? [String: Any])?["required"] as? [String])
        #expect(Set(headers) == ["ce_specversion", "ce_id", "ce_source", "ce_type", "ce_time", "content-type"])
    }

    static let released = contracts.appendingPathComponent("Released")
    static let compatibility = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("check_compatibility.py")

    func checkCompatibility(of current: URL) async throws -> String {
        try await ProcessCommand(Self.python, [Self.compatibility.path, Self.released.path, current.path]).runToCompletion()
    }

    @Test func everyReleasedTypeKeepsWhatItPromisedItsConsumers() async throws {
        let released = try FileManager.default.contentsOfDirectory(atPath: Self.released.path).filter { $0.hasSuffix(".schema.json") }
        #expect(Set(released.map { String($0.dropLast(".schema.json".count)) }).isSubset(of: Set(EventCatalog.all.map { $0.type })))
        let output = try await checkCompatibility(of: Self.schemas)
        #expect(output.contains("compared \(released.count) released type(s), 0 breaking change(s)"), "\(output)")
    }

    @Test func aChangeThatBreaksAReleasedTypeFailsUnlessItIsANewType() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("changed-schemas-\(UUID().uuidString.prefix(8))")
        try FileManager.default.copyItem(at: Self.schemas, to: folder)
        defer { try? FileManager.default.removeItem(at: folder) }
        func edit(_ type: String, _ change: (inout [String: Any]) -> Void) throws {
            let file = folder.appendingPathComponent("\(type).schema.json")
            var schema = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
            change(&schema)
            try JSONSerialization.data(withJSONObject: schema).write(to: file)
        }
        func editProperties(_ type: String, _ change: (inout [String: Any]) -> Void) throws {
            try edit(type) { schema in
                var properties = schema["properties"] as? [String: Any] ?? [:]
                change(&properties)
                schema["properties"] = properties
            }
        }
        // The same changes as a new type are allowed: only released types are held to their promise.
        try FileManager.default.copyItem(
            at: folder.appendingPathComponent("auth.profile.updated.v1.schema.json"),
            to: folder.appendingPathComponent("auth.profile.updated.v2.schema.json")
        )
        try editProperties("auth.profile.updated.v2") { $0["avatarUrl"] = nil }
        _ = try await checkCompatibility(of: folder)

        try editProperties("auth.profile.updated.v1") { $0["avatarUrl"] = nil }
        try editProperties("auth.user.registered.v1") { $0["registeredAt"] = ["type": "integer"] }
        try edit("tracking.order.status-changed.v1") { schema in
            var properties = schema["properties"] as? [String: Any] ?? [:]
            var status = properties["status"] as? [String: Any] ?? [:]
            status["enum"] = (status["enum"] as? [String] ?? []) + ["teleported"]
            properties["status"] = status
            schema["properties"] = properties
        }
        do {
            _ = try await checkCompatibility(of: folder)
            Issue.record("three breaking changes passed")
        } catch let failure as ProcessCommand.Failure {
            #expect(failure.output.contains("auth.profile.updated.v1: #/avatarUrl: property removed"), "\(failure.output)")
            #expect(
                failure.output.contains("auth.user.registered.v1: #/registeredAt: type changed from ['string'] to ['integer']"),
                "\(failure.output)"
            )
            #expect(failure.output.contains("tracking.order.status-changed.v1: #/status: enum values added ['teleported']"), "\(failure.output)")
            #expect(failure.output.contains("compared 19 released type(s), ") && !failure.output.contains("v2"), "\(failure.output)")
        }
    }

    @Test func everyMessageOfTheAsyncAPIDocumentReferencesItsSchemaAndExampleFiles() throws {
        let text = try String(contentsOf: Self.contracts.appendingPathComponent("asyncapi.yaml"), encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        let components = try #require(document["components"] as? [String: Any])
        let messages = try #require(components["messages"] as? [String: [String: Any]])
        for (key, message) in messages {
            let type = try #require(message["name"] as? String)
            let payload = try #require(message["payload"] as? [String: Any])
            #expect(payload["schemaFormat"] as? String == "application/schema+json;version=draft-2020-12", "\(key)")
            let schema = try #require((payload["schema"] as? [String: Any])?["$ref"] as? String, "\(key)")
            #expect(schema == "Schemas/\(type).schema.json", "\(key)")
            let examples = try #require(message["examples"] as? [[String: Any]], "\(key)")
            let example = try #require((examples.first?["payload"] as? [String: Any])?["$ref"] as? String, "\(key)")
            #expect(example == "Schemas/\(type).example.json", "\(key)")
            for reference in [schema, example] {
                #expect(FileManager.default.fileExists(atPath: Self.contracts.appendingPathComponent(reference).path), "\(key): \(reference)")
            }
        }
        // Each channel's messages are components of the document, and each operation's channel is one of its channels.
        let channels = try #require(document["channels"] as? [String: [String: Any]])
        for (name, channel) in channels {
            for (_, reference) in channel["messages"] as? [String: [String: String]] ?? [:] {
                let target = try #require(reference["$ref"], "\(name)")
                #expect(
                    target.hasPrefix("#/components/messages/") && messages[String(target.dropFirst("#/components/messages/".count))] != nil,
                    "\(name): \(target)"
                )
            }
        }
        for (name, operation) in try #require(document["operations"] as? [String: [String: Any]]) {
            let target = try #require((operation["channel"] as? [String: String])?["$ref"], "\(name)")
            #expect(channels[String(target.dropFirst("#/channels/".count))] != nil, "\(name): \(target)")
        }
    }

    private func reencode<Event: DomainEvent>(_: Event.Type, _ data: Data) throws -> Data {
        try EventJSON.encoder.encode(try EventJSON.decoder.decode(Event.self, from: data))
    }
}

@Suite("RFC 3339 timestamps")
struct RFC3339Tests {
    @Test func timestampsAreUTCWithTheDigitsAsked() {
        let date = Date(timeIntervalSince1970: 1_795_000_000.123456)
        #expect(RFC3339.format(date) == "2026-11-18T11:06:40.123Z")
        #expect(RFC3339.format(date, fractionalDigits: 6) == "2026-11-18T11:06:40.123456Z")
        #expect(RFC3339.format(date, fractionalDigits: 0) == "2026-11-18T11:06:40Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -0.5), fractionalDigits: 3) == "1969-12-31T23:59:59.500Z")
        // What the events' decoder reads back is the same instant, to the millisecond.
        let read = EventJSON.parseTimestamp(RFC3339.format(date))
        #expect(read.map { abs($0.timeIntervalSince(date)) < 0.001 } == true)
    }
}

@Suite("tracking's v1 events beside v2")
struct TrackingV1CompatibilityTests {
    @Test func aWholeDeliveryReachesV1ConsumersAsTheMovesTheyKnowEachOnce() {
        let parties = OrderParties(customerId: UUID(), restaurantId: UUID(), restaurantOwnerId: UUID(), driverId: UUID())
        let path: [OrderStatus] = [
            .placed, .accepted, .preparing, .readyForPickup, .driverAssigned, .readyForPickup, .driverAssigned,
            .enrouteToPickup, .arrivedAtPickup, .pickedUp, .enrouteToDropoff, .arrivedAtDropoff, .delivered,
        ]
        var v1Status = OrderStatusV1.placed
        var seen: [OrderStatusV1] = []
        for (version, (previous, status)) in zip(path, path.dropFirst()).enumerated() {
            let move = OrderStatusChanged(
                orderId: UUID(),
                parties: parties,
                status: status,
                previousStatus: previous,
                by: .init(userId: nil, role: .dispatch),
                reason: nil,
                version: version + 2,
                changedAt: Date()
            )
            if let twin = move.v1(after: v1Status) {
                #expect(twin.previousStatus == v1Status)
                #expect(twin.parties.restaurantId == parties.restaurantId)
                seen.append(twin.status)
                v1Status = twin.status
            }
        }
        #expect(seen == [.accepted, .preparing, .ready, .pickedUp, .delivered])
        // Every status has a v1 meaning or none; a rejection ends the order for v1 as a cancellation.
        #expect(OrderStatusV1(.rejected) == .cancelled)
        #expect(OrderStatus.allCases.compactMap(OrderStatusV1.init).count == 8)
    }
}
