import Database
import EventBus
import Foundation
import Mail
import S3Blobs
import ServiceKit
import TestSupport
import Testing

/// The documentation stays true: its links lead somewhere, each service's configuration table is
/// what the service reads, every service's README has the same parts, and nothing points outside
/// the repository (a user's clone has nothing beside it).
@Suite("Documentation")
struct DocumentationTests {
    /// Every Markdown page of the repository, by its path from the root.
    let pages: [String: MarkdownDocument]

    init() throws {
        var pages: [String: MarkdownDocument] = [:]
        for path in try Repository.files() where path.hasSuffix(".md") {
            pages[path] = MarkdownDocument(try Repository.text(path))
        }
        self.pages = pages
    }

    // MARK: Links

    @Test func everyRelativeLinkAndAnchorLeadsToSomethingThatExists() throws {
        #expect(pages.count >= 10, "found only \(pages.keys.sorted())")
        for (path, page) in pages.sorted(by: { $0.key < $1.key }) {
            for link in page.links where !Self.isExternal(link.target) {
                let place = "\(path):\(link.line): \(link.target)"
                let parts = link.target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                let anchor = parts.count > 1 ? String(parts[1]) : nil
                let target: String
                if file.isEmpty {
                    target = path
                } else {
                    guard let resolved = Repository.resolve(file, from: path) else {
                        Issue.record("\(place) leads outside the repository")
                        continue
                    }
                    target = resolved
                    guard Repository.exists(target) else {
                        Issue.record("\(place): no file or folder \(target)")
                        continue
                    }
                }
                guard let anchor else { continue }
                guard let document = pages[target] else {
                    Issue.record("\(place): an anchor into \(target), which is not a Markdown page")
                    continue
                }
                #expect(document.headings.contains { $0.anchor == anchor }, "\(place): \(target) has no heading #\(anchor)")
            }
        }
    }

    @Test func nothingRefersToAPathOutsideTheRepository() throws {
        let outside = try NSRegularExpression(pattern: #"\.\./shared"#)
        var checked = 0
        for path in try Repository.files() {
            guard let text = try? Repository.text(path) else { continue }  // not text: an image
            checked += 1
            for match in outside.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let line = text[..<(Range(match.range, in: text)!.lowerBound)].filter { $0 == "\n" }.count + 1
                Issue.record("\(path):\(line) refers to a path outside the repository")
            }
        }
        #expect(checked > 100)
    }

    // MARK: Stale sentences

    /// A path of the repository named in a page's code span (`Services/Gateway/Edge/`) names a
    /// file or folder that exists: code that moved takes its mentions with it. Templates
    /// (`Services/<Name>/…`) and globs are not paths.
    @Test func everyRepositoryPathInCodeSpansExists() throws {
        let span = try NSRegularExpression(pattern: #"`((?:Services|Shared|Tests|Tools|Benchmarks|Fuzz|deploy|docs)/[A-Za-z0-9_.+/-]*)`"#)
        var checked = 0
        for (path, page) in pages.sorted(by: { $0.key < $1.key }) {
            let text = page.prose
            for match in span.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range(at: 1), in: text) else { continue }
                let named = String(text[range])
                let target = named.hasSuffix("/") ? String(named.dropLast()) : named
                checked += 1
                #expect(Repository.exists(target), "\(path) names `\(named)`, which does not exist")
            }
        }
        #expect(checked > 20)
    }

    /// No page promises what is not there: a sentence saying something is not written or built
    /// yet, or will come, is stale the day it lands and misleading until then.
    @Test func noPageSaysSomethingIsNotWrittenYet() throws {
        let promise = try NSRegularExpression(
            pattern: #"\b(not (written|implemented|built|done) yet|coming soon|TODO|TBD)\b"#,
            options: [.caseInsensitive]
        )
        for (path, page) in pages.sorted(by: { $0.key < $1.key }) {
            let text = page.prose
            for match in promise.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range, in: text) else { continue }
                let line = text[..<range.lowerBound].filter { $0 == "\n" }.count + 1
                Issue.record("\(path):\(line) says \"\(text[range])\"")
            }
        }
    }

    // MARK: Service READMEs

    static let serviceSections = ["What it owns", "API", "Configuration", "Events", "Figures"]

    @Test func everyServiceHasAReadmeWithTheSameSectionsInTheSameOrder() throws {
        let services = try Repository.services()
        #expect(!services.isEmpty)
        for service in services {
            let path = "Services/\(service.module)/README.md"
            let page = try #require(pages[path], "\(service.executable) has no \(path)")
            #expect(page.headings.filter { $0.level == 2 }.map(\.text) == Self.serviceSections, "\(path)")
            #expect(page.headings.first?.level == 1, "\(path) starts with its title")
            for index in ["README.md", "Services/README.md"] {
                #expect(
                    pages[index]?.links.contains { Repository.resolve($0.target, from: index) == path } == true,
                    "\(index) does not link to \(path)"
                )
            }
        }
    }

    /// Every variable a service process reads is documented once: in its README's configuration
    /// table, or in docs/configuration.md when the shared libraries read it; every row of those
    /// tables names a variable that is read.
    @Test func everyVariableAServiceReadsIsInItsConfigurationTableAndNoRowIsStale() throws {
        let shared = try Self.sharedVariables()
        #expect(shared.isSuperset(of: ["HTTP_PORT", "LOG_LEVEL", "DATABASE_URL", "KAFKA_BROKERS", "SPLASH_PARENT_PID"]))
        let sharedPage = try #require(pages["docs/configuration.md"])
        let sharedRows = Self.configurationRows(of: sharedPage, in: nil)
        #expect(sharedRows.count >= shared.count - 1)
        for variable in shared.sorted() {
            #expect(sharedRows.contains { $0.matches(variable) }, "docs/configuration.md does not document \(variable)")
        }
        for row in sharedRows {
            #expect(shared.contains { row.matches($0) }, "docs/configuration.md:\(row.line): the shared libraries read no \(row.name)")
        }

        for service in try Repository.services() {
            let path = "Services/\(service.module)/README.md"
            let page = try #require(pages[path])
            let section = try #require(page.section("Configuration"), "\(path) has no Configuration section")
            #expect(
                page.links.contains {
                    section.contains($0.line) && Repository.resolve($0.target.components(separatedBy: "#")[0], from: path) == "docs/configuration.md"
                },
                "\(path)'s Configuration section does not link to the shared settings"
            )
            let read = try Self.variablesRead(by: service.executable)
            let rows = Self.configurationRows(of: page, in: section)
            for variable in read.subtracting(shared).sorted() {
                #expect(
                    rows.contains { $0.matches(variable) },
                    "\(path): \(service.executable) reads \(variable), which its configuration table does not document"
                )
            }
            for row in rows {
                #expect(
                    read.subtracting(shared).contains { row.matches($0) },
                    "\(path):\(row.line): \(service.executable) reads no \(row.name)\(shared.contains { row.matches($0) } ? " of its own (a shared setting: documented in docs/configuration.md only)" : "")"
                )
            }
        }
    }

    /// Configuration tables elsewhere (the local stack's) name variables that code reads.
    @Test func otherConfigurationTablesNameVariablesThatSomethingReads() throws {
        let sources = try Repository.files().filter { $0.hasSuffix(".swift") && !$0.hasPrefix("Tests/") }
            .map { try Repository.text($0) }.joined(separator: "\n")
        let compose = try Repository.text("docker-compose.yml")
        let servicePages = Set(try Repository.services().map { "Services/\($0.module)/README.md" } + ["docs/configuration.md"])
        for (path, page) in pages where !servicePages.contains(path) {
            for row in Self.configurationRows(of: page, in: nil) {
                #expect(sources.contains("\"\(row.name)\"") || compose.contains("${\(row.name)"), "\(path):\(row.line): nothing reads \(row.name)")
            }
        }
    }

    // MARK: Reading configurations

    /// The variables a service process reads, set or not: its log settings, its parent process
    /// and its configuration, loaded from its docker-compose environment.
    static func variablesRead(by executable: String) throws -> Set<String> {
        let configuration = try #require(serviceConfigurations[executable])
        let log = ConfigurationReadLog()
        let environment = try ComposeFileTests().loadableEnvironment(of: executable)
        if case .failure(let failure) = loadConfiguration(configuration, executable: executable, environment: environment, log: log) {
            Issue.record("\(executable) does not load from its compose environment: \(failure.message)")
        }
        return log.namesRead
    }

    /// Loads `type` from `environment`, recording in `log` the variables it reads.
    static func loadConfiguration<Configuration: ServiceConfiguration>(
        _ type: Configuration.Type,
        executable: String,
        environment: [String: String],
        log: ConfigurationReadLog
    ) -> Result<Void, ServiceMain.ConfigurationFailure> {
        ServiceMain.loadConfiguration(executable, type, environment: environment, log: log).map { _ in }
    }

    /// What the shared libraries read: the HTTP server's, logging's, the database's and the event
    /// bus's settings, and the parent process.
    static func sharedVariables() throws -> Set<String> {
        let log = ConfigurationReadLog()
        let loaded = ServiceMain.loadConfiguration(
            "shared",
            SharedSettingsOnly.self,
            environment: [
                "DATABASE_URL": "postgres://user:password@localhost:5432/splash", "KAFKA_BROKERS": "localhost:9092",
                // The S3 store, so that every one of its settings is read.
                "BLOB_STORE": "s3", "S3_ENDPOINT": "http://127.0.0.1:9000", "S3_BUCKET": "splash", "S3_ACCESS_KEY_ID": "id",
                "S3_SECRET_ACCESS_KEY": "secret",
            ],
            log: log
        )
        if case .failure(let failure) = loaded { Issue.record("\(failure.message)") }
        return log.namesRead
    }

    /// A configuration of nothing but the shared parts.
    struct SharedSettingsOnly: ServiceConfiguration {
        var http: HTTPServerSettings

        init(from reader: ConfigurationReader) throws(ConfigurationError) {
            http = try HTTPServerSettings(from: reader, defaultPort: 1)
            _ = try DatabaseSettings(from: reader)
            _ = try EventBusSettings(from: reader)
            _ = try BlobStoreChoice(from: reader, folder: URL(fileURLWithPath: "/tmp"))
            _ = try MailSettings(from: reader)
        }
    }

    // MARK: Configuration tables

    /// One variable (or a family: `GATEWAY_TIMEOUT_<GROUP>`) a configuration table documents.
    struct ConfigurationRow {
        var name: String
        var line: Int

        func matches(_ variable: String) -> Bool {
            guard name.contains("<") else { return name == variable }
            let pattern = "^" + name.replacingOccurrences(of: #"<[A-Z]+>"#, with: "[A-Z0-9_]+", options: .regularExpression) + "$"
            return variable.range(of: pattern, options: .regularExpression) != nil
        }
    }

    /// The variables named in the first column of every table headed `variable`, within `lines`
    /// (the whole page when `nil`).
    static func configurationRows(of page: MarkdownDocument, in lines: ClosedRange<Int>?) -> [ConfigurationRow] {
        let name = try! NSRegularExpression(pattern: #"`([A-Z][A-Z0-9_]*(?:<[A-Z]+>[A-Z0-9_]*)*)`"#)
        return page.tables.filter { $0.header.first == "variable" && lines?.contains($0.line) ?? true }.flatMap { table in
            table.rows.enumerated().flatMap { offset, row in
                let cell = row.first ?? ""
                return name.matches(in: cell, range: NSRange(cell.startIndex..., in: cell)).compactMap { match in
                    Range(match.range(at: 1), in: cell).map { ConfigurationRow(name: String(cell[$0]), line: table.line + 2 + offset) }
                }
            }
        }
    }

    static func isExternal(_ target: String) -> Bool {
        target.range(of: #"^[a-zA-Z][a-zA-Z0-9+.-]*:"#, options: .regularExpression) != nil
    }
}
