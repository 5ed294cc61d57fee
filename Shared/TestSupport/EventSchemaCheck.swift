import EventBus
import Foundation
import LocalStack

/// Events a service really published, checked against their JSON Schemas in
/// `Shared/Contracts/Schemas` by Python's `jsonschema` (Draft 2020-12, formats checked) through
/// `Tests/ContractsTests/validate_events.py`: not by our own code.
package enum EventSchemaCheck {
    /// `Shared/Contracts/Schemas`: each type's schema and example.
    package static let schemas = OpenAPIDocument.root.appendingPathComponent("Shared/Contracts/Schemas")

    /// Validates each event's payload against the schema of its type.
    /// - Returns: the validator's report (`validated N payload(s), 0 failure(s)` when all pass).
    /// - Throws: `ProcessCommand.Failure`, with each failure's place and message, when one fails.
    @discardableResult
    package static func validate(_ events: [EventEnvelope]) async throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("published-events-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (index, event) in events.enumerated() {
            try Data(event.data).write(to: folder.appendingPathComponent("\(event.type)~\(index).json"))
        }
        return try await validate(folder: folder)
    }

    /// Validates every payload file in `folder` (`<type>.json`, `<type>.example.json` or
    /// `<type>~<n>.json`) against the schema of its type.
    /// - Returns and throws: as `validate(_:)`.
    @discardableResult
    package static func validate(folder: URL) async throws -> String {
        try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                OpenAPIDocument.root.appendingPathComponent("Tests/ContractsTests/validate_events.py").path, schemas.path, folder.path,
            ]
        ).runToCompletion()
    }
}
