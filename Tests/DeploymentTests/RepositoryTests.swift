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
}
