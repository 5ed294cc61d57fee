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

    /// A target reaches another's code by depending on its library, never by a link to its files
    /// (the fuzz targets once compiled the services' parsers through eight symlinks).
    @Test func noFileOfTheRepositoryIsASymbolicLink() throws {
        let files = try Repository.files()
        #expect(files.count > 100)
        for path in files {
            let values = try Repository.root.appendingPathComponent(path).resourceValues(forKeys: [.isSymbolicLinkKey])
            #expect(values.isSymbolicLink != true, "\(path) is a symbolic link: move what it points to into a library both targets depend on")
        }
    }

    @Test func buildOutputAndLocalStateAreNeverCommitted() throws {
        let ignored = Set(try Repository.text(".gitignore").split(separator: "\n").map(String.init))
        for entry in [".build", ".build-*", ".data", "Package.resolved", ".env"] {
            #expect(ignored.contains(entry), ".gitignore lacks \(entry)")
        }
    }
}
