import Foundation
import LocalStack
import TestSupport
import Testing

/// The request examples of every service's `openapi.yaml`: each JSON body has one, and each is
/// valid against its schema by Python's jsonschema. schemathesis's examples phase sends them, so
/// a service's contract run tries the documented request first.
@Suite struct OpenAPIExampleTests {
    static let documents = ["Auth", "EditRender", "Gateway", "PhotoCatalog", "Social", "Tracking"]
        .map { OpenAPIDocument.root.appendingPathComponent("Services/\($0)/openapi.yaml").path }

    static func check(_ paths: [String]) async throws -> String {
        try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [OpenAPIDocument.root.appendingPathComponent("Tests/ContractsTests/check_openapi_examples.py").path] + paths
        ).runToCompletion()
    }

    @Test func everyJSONRequestBodyHasAnExampleItsSchemaAccepts() async throws {
        let report = try await Self.check(Self.documents)
        #expect(report.contains("checked 28 example(s), 0 problem(s)"), "\(report)")
    }

    @Test func anExampleTheSchemaRefusesOrAMissingOneFails() async throws {
        let tracking = try String(contentsOfFile: Self.documents[5], encoding: .utf8)
        let broken = tracking.replacingOccurrences(of: #"example: {"onShift": true}"#, with: #"example: {"onShift": "yes"}"#)
            .replacingOccurrences(of: #"            example: {"to": "accepted"}"#, with: "")
        #expect(broken != tracking)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("broken-openapi-\(UUID().uuidString.prefix(8)).yaml")
        try broken.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        await #expect {
            try await Self.check([file.path])
        } throws: { error in
            let text = "\(error)"
            return text.contains("POST /v1/drivers/me/shift: $.onShift: 'yes' is not of type 'boolean'")
                && text.contains("POST /v1/orders/{id}/transitions: no example")
        }
    }
}
