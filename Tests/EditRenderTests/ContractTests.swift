import Contracts
import EventBus
import Foundation
import HTTPTypes
import PostgresNIO
import TestSupport
import Testing
import Yams

/// edit-render's answers against `Services/EditRender/openapi.yaml`.
/// `make contract SERVICE=edit-render` runs this suite alone.
@Suite("edit-render contract")
struct ContractTests {
    static let contract = try! OpenAPIDocument(service: "EditRender")

    static func document() throws -> [String: Any] { try contract.load() }

    static func required(_ name: String) throws -> Set<String> { try contract.required(name) }

    @Test func everyDocumentedOperationIsServedAndErrorsAreProblems() async throws {
        let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
        #expect(Set(paths.keys) == ["/filters", "/edits/preview", "/edits", "/edits/{id}", "/uploads", "/media/{key}", "/workers"])
        let operations = try Self.contract.operations()
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            for (path, method) in operations {
                do {
                    let concrete = path.replacingOccurrences(of: "{id}", with: UUID().uuidString).replacingOccurrences(
                        of: "{key}",
                        with: "\(UUID())/\(UUID())/edited.jpg"
                    )
                    let response = try await render.call(
                        HTTPRequest.Method(method.uppercased())!,
                        "/v1" + concrete,
                        user: UUID(),
                        headers: [("Idempotency-Key", "contract")],
                        json: "{}"
                    )
                    #expect(response.status != 405 && response.status < 500, "\(method) \(path): \(response.status)")
                    if response.status >= 400 {
                        #expect(response.headers["content-type"] == "application/problem+json", "\(method) \(path)")
                        #expect(Set(try response.json().keys).isSuperset(of: try Self.required("Problem")))
                    }
                }
            }
        }
    }

    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        try await RenderHarness.with { render in
            let report = try await Schemathesis(
                service: "EditRender",
                baseURL: render.app.baseURL + "/v1",
                headers: [("Authorization", "Bearer \(try render.token(user: UUID()))")]
            ).run()
            #expect(report.passed, "\(report)")
        }
    }

    @Test func anEditAndTheCatalogHaveTheDocumentedShapes() async throws {
        try await RenderHarness.with { render in
            let filters = try await render.call(.get, "/v1/filters", user: nil).json()
            #expect(Set(filters.keys) == (try Self.required("FilterCatalog")))
            let user = UUID()
            let created = try await render.createEdit(#"{"source":{"unsplashPhotoId":"Aqua-1"},"filters":[{"name":"mono"}]}"#, user: user)
            #expect(Set(try created.json().keys).isSuperset(of: try Self.required("Edit")))
            let edit = try await render.finished(try #require(try created.json()["id"] as? String), user: user)
            #expect(Set(edit.keys).isSuperset(of: try Self.required("Edit").union(["result", "finishedAt"])))
            let result = try #require(edit["result"] as? [String: Any])
            #expect(Set(result.keys) == ["url", "expiresAt", "width", "height", "bytes", "quality", "format"])
        }
    }

    /// Every type edit-render publishes, produced through its API (an edit that renders, one whose
    /// photo does not exist) and checked against its JSON Schema.
    @Test func everyEventItPublishesMatchesItsSchema() async throws {
        try await RenderHarness.with { render in
            let user = UUID()
            var events: [EventEnvelope] = []
            for (photo, outcome) in [("FreshFlower-1", "completed"), ("missing-1", "failed")] {
                let created = try await render.createEdit(
                    #"{"source":{"unsplashPhotoId":"\#(photo)"},"filters":[{"name":"sepia","intensity":0.8}]}"#,
                    user: user
                )
                let id = try #require(try created.json()["id"] as? String)
                #expect(try await render.finished(id, user: user)["status"] as? String == outcome)
                try await render.database.waitUntilOutboxIsPublished(schema: "render")
                for topic in [TopicCatalog.renderJobs, TopicCatalog.renderResults] {
                    events += try await TestKafka.shared.events(on: topic.name, key: id)
                }
            }
            #expect(events.map(\.type) == [EditRequested.type, EditCompleted.type, EditRequested.type, EditFailed.type])
            let report = try await EventSchemaCheck.validate(events)
            #expect(report.contains("validated \(events.count) payload(s), 0 failure(s)"), "\(report)")
        }
    }

    /// The one type edit-render consumes (its own work queue), replayed from the schema's example
    /// onto an edit the API had queued: a worker renders it with the example's filters. A type
    /// it does not know, ahead of it on the same partition, is skipped with a log line.
    @Test func theJobItConsumesIsRenderedFromItsSchemasExample() async throws {
        try await RenderHarness.with { render in
            var examples = EventExamples()
            // The example's photo is a real Unsplash id; the fake catalog serves this one.
            let job = try examples.example(EditRequested.self, replacing: ["Dwu85P9SOIk": "FreshFlower-1"])
            // What the API would have stored: the edit, queued (its own request never sent).
            try await render.database.withClient { client in
                try await client.query(
                    """
                    INSERT INTO render.edits (id, user_id, idempotency_key, request_hash, source, filters, output)
                    VALUES (\(job.editId), \(job.userId), 'replay', 'replay', \(try Self.json(job.source))::jsonb,
                            \(try Self.json(job.filters))::jsonb, \(try Self.json(job.output))::jsonb)
                    """
                )
            }
            try await TestKafka.shared.publish([EditCancelledV9(editId: job.editId), job], source: "/splash/edit-render")
            let edit = try await render.finished(job.editId.lowercased, user: job.userId)
            #expect(edit["status"] as? String == "completed", "\(edit)")
            let result = try #require(edit["result"] as? [String: Any])
            #expect((result["width"] as? Int).map { max($0, result["height"] as? Int ?? 0) } == job.output.longestEdge)
            #expect(
                render.logs.text.contains("Skipping an event of a type this consumer does not know")
                    && render.logs.text.contains(EditCancelledV9.type)
            )
        }
    }

    /// A type no Splash service knows, on edit-render's queue.
    struct EditCancelledV9: DomainEvent {
        static let type = "render.edit.cancelled.v9"
        static let topic = TopicCatalog.renderJobs
        var editId: UUID
        var aggregateID: String { editId.lowercased }
    }

    static func json(_ value: some Encodable) throws -> String {
        String(decoding: try EventJSON.encoder.encode(value), as: UTF8.self)
    }
}
