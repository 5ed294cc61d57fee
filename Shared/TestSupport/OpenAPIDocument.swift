import Foundation
import Yams

/// A service's `Services/<Module>/openapi.yaml`, as its contract tests read it.
package struct OpenAPIDocument: Sendable {
    /// The whole document, as YAML gives it.
    package let text: String

    /// The repository's root folder.
    package static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    package init(service module: String) throws {
        text = try String(contentsOf: Self.root.appendingPathComponent("Services/\(module)/openapi.yaml"), encoding: .utf8)
    }

    package func load() throws -> [String: Any] {
        guard let document = try Yams.load(yaml: text) as? [String: Any] else { throw NotAnObject() }
        return document
    }

    /// Each path with its methods.
    package func paths() throws -> [String: [String: Any]] {
        try load()["paths"] as? [String: [String: Any]] ?? [:]
    }

    /// Every operation: its path and method (`parameters` entries left out).
    package func operations() throws -> [(path: String, method: String)] {
        try paths().flatMap { path, methods in methods.keys.filter { $0 != "parameters" }.map { (path, $0) } }
    }

    /// The required properties of the schema `name` under `components/schemas`.
    package func required(_ name: String) throws -> Set<String> {
        let schemas = (try load()["components"] as? [String: Any])?["schemas"] as? [String: Any]
        return Set((schemas?[name] as? [String: Any])?["required"] as? [String] ?? [])
    }

    struct NotAnObject: Error {}
}
