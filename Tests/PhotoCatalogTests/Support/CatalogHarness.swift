import Foundation
import Identity
import LocalStack
import Logging
import PostgresNIO
import ServiceKit
import TestSupport

@testable import PhotoCatalog

/// photo-catalog for one test: its own database (reached as the role that owns only the `catalog`
/// schema), in front of a fresh `FakeUnsplash` (or offline, with the fixture set), every log line
/// captured. With `replicas: 2`, two catalog applications share the database, as two replicas do.
struct CatalogHarness: Sendable {
    let apps: [RunningApplication]
    let unsplash: FakeUnsplash
    let database: TestDatabase
    let logs: CapturedOutput

    var app: RunningApplication { apps[0] }

    static let publicURL = "https://splash.test"

    static func with<Result: Sendable>(
        _ overrides: [String: String] = [:],
        replicas: Int = 1,
        offline: Bool = false,
        _ body: @Sendable (CatalogHarness) async throws -> Result
    ) async throws -> Result {
        let unsplash = FakeUnsplash()
        try await unsplash.start()
        do {
            let result = try await run(overrides, replicas: replicas, offline: offline, unsplash: unsplash, body)
            await unsplash.stop()
            return result
        } catch let error as PSQLError {
            await unsplash.stop()
            throw DatabaseFailure(details: String(reflecting: error))
        } catch {
            await unsplash.stop()
            throw error
        }
    }

    struct DatabaseFailure: Error, CustomStringConvertible {
        var details: String
        var description: String { details }
    }

    private static func run<Result: Sendable>(
        _ overrides: [String: String],
        replicas: Int,
        offline: Bool,
        unsplash: FakeUnsplash,
        _ body: @Sendable (CatalogHarness) async throws -> Result
    ) async throws -> Result {
        var settings = [
            "CATALOG_PUBLIC_URL": publicURL,
            "CATALOG_DOWNLOAD_RETRY_BASE": "100ms",
            "UNSPLASH_API_URL": unsplash.baseURL,
            "UNSPLASH_TIMEOUT": "2s",
        ]
        if !offline { settings["UNSPLASH_ACCESS_KEY"] = FakeUnsplash.accessKey }
        let service = try await ServiceHarness.prepare(
            .init(schema: "catalog", keys: ("CATALOG", "http://127.0.0.1:\(unsplash.port)/jwks.json")),
            settings: settings,
            overrides: overrides
        )
        let logs = try CapturedOutput()
        let factory = LogSettings(format: .json, level: .debug).makeHandlerFactory(output: logs.output)
        let logger = Logger(label: "photo-catalog") { label in factory(label, nil) }
        return try await service.run("photo-catalog", PhotoCatalogConfiguration.self, logger: logger, replicas: replicas, build: buildApplication) {
            apps in
            try await body(CatalogHarness(apps: apps, unsplash: unsplash, database: service.database!, logs: logs))
        }
    }

    // MARK: Calls

    func get(_ path: String, on replica: Int = 0, headers: [(String, String)] = []) async throws -> TestResponse {
        try await apps[replica].request(.get, path, headers: headers)
    }

    func reportDownload(_ photo: String, bearer: String?, headers: [(String, String)] = []) async throws -> TestResponse {
        try await app.request(.post, "/v1/photos/\(photo)/download", headers: headers + (bearer.map { [("Authorization", "Bearer \($0)")] } ?? []))
    }

    /// An access token for `user`, signed with the key set the catalog is configured with.
    func token(user: UUID = UUID(), expiresIn: TimeInterval = 3_600) throws -> String {
        try testAccessToken(user: user, key: unsplash.key, issuer: ServiceHarness.issuer, expiresIn: expiresIn)
    }

    /// Rows of `catalog.<table>`, read as the superuser.
    func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await database.count("catalog.\(table)", where: condition)
    }

    /// Waits until `condition` holds, for at most `timeout`.
    func eventually(_ what: String, timeout: Duration = .seconds(10), _ condition: @escaping @Sendable () async throws -> Bool) async throws {
        try await TestSupport.eventually(what, timeout: timeout, condition)
    }
}
