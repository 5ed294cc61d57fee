import Foundation
import Testing
import Yams

/// The repository's YAML (OpenAPI and AsyncAPI documents, compose, Kubernetes, CI) as a reader
/// sees it: each file parses, and no key is a piece of prose. In flow style an unquoted comma ends
/// a value, so `{ description: at most 2,200 characters }` silently made a key named "200
/// characters"; four documents had nine such keys before this test.
struct YAMLFileTests {
    @Test func everyFileParsesAndNoKeyIsAStrayPieceOfProse() throws {
        let files = try Repository.files().filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }
        #expect(files.count > 20)
        for path in files {
            for document in try Yams.load_all(yaml: try Repository.text(path)) {
                for key in Self.strayKeys(in: document) { Issue.record("\(path): key \"\(key)\" holds nothing; quote the value it was cut from") }
            }
        }
    }

    /// Keys with a space that map to nothing: what a value cut at a comma leaves.
    static func strayKeys(in node: Any?) -> [String] {
        switch node {
        case let mapping as [String: Any]:
            return mapping.flatMap { key, value in ((key.contains(" ") && value is NSNull) ? [key] : []) + strayKeys(in: value) }
        case let mapping as [AnyHashable: Any]:
            return mapping.values.flatMap { strayKeys(in: $0) }
        case let sequence as [Any]:
            return sequence.flatMap { strayKeys(in: $0) }
        default:
            return []
        }
    }
}
