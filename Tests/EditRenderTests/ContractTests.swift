import Foundation
import HTTPTypes
import Testing
import TestSupport
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
        #expect(Set(paths.keys) == ["/filters", "/edits/preview", "/edits", "/edits/{id}", "/uploads", "/media/{key}"])
        let operations = try Self.contract.operations()
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            for (path, method) in operations {
                do {
                    let concrete = path.replacingOccurrences(of: "{id}", with: UUID().uuidString).replacingOccurrences(of: "{key}", with: "\(UUID())/\(UUID())/edited.jpg")
                    let response = try await render.call(HTTPRequest.Method(method.uppercased())!, "/v1" + concrete, user: UUID(), headers: [("Idempotency-Key", "contract")], json: "{}")
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
            let report = try await Schemathesis(service: "EditRender", baseURL: render.app.baseURL + "/v1",
                                                headers: [("Authorization", "Bearer \(try render.token(user: UUID()))")]).run()
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
}
