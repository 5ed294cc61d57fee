import Foundation
import Testing

@Suite("What a newcomer and CI rely on")
struct RepositoryTests {
    @Test func ciRunsTheREADMEsTestCommand() throws {
        #expect(try Repository.text(".ci/run").contains("make test"))
        let readme = try Repository.text("README.md")
        #expect(readme.contains("make run"))
        #expect(readme.contains("make test"))
    }

    @Test func buildOutputAndLocalStateAreNeverCommitted() throws {
        let ignored = Set(try Repository.text(".gitignore").split(separator: "\n").map(String.init))
        for entry in [".build", ".build-*", ".data", "Package.resolved", ".env"] {
            #expect(ignored.contains(entry), ".gitignore lacks \(entry)")
        }
    }

    /// Every environment variable the shared libraries read is in the README's configuration table.
    @Test func readmeDocumentsEveryVariableTheLibrariesRead() throws {
        let readme = try Repository.text("README.md")
        let pattern = try NSRegularExpression(pattern: #"(?:string|integer|port|bool|duration|byteCount|choice|url|value|optionalValue|rateLimit|ipRanges)\(\s*"([A-Z][A-Z0-9_]+)""#)
        var variables: Set<String> = []
        for library in ["Shared/ServiceKit", "Shared/Database", "Shared/EventBus", "Services/Auth", "Services/Gateway"] {
            let directory = Repository.root.appendingPathComponent(library)
            let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            for file in files where file.pathExtension == "swift" {
                let source = try String(contentsOf: file, encoding: .utf8)
                for match in pattern.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
                    if let range = Range(match.range(at: 1), in: source) { variables.insert(String(source[range])) }
                }
            }
        }
        #expect(variables.isSuperset(of: ["DATABASE_URL", "HTTP_PORT", "LOG_FORMAT"]))
        for variable in variables.sorted() {
            #expect(readme.contains("`\(variable)`"), "README does not document \(variable)")
        }
    }
}
