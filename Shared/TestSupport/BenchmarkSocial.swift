import Foundation

/// A release `social` for a benchmark, on a database and blob folder of its own, the test broker,
/// and a fake photo-catalog that also publishes the key its users' tokens are signed with.
package struct BenchmarkSocial: Sendable {
    package static let issuer = "http://localhost:8080/auth/v1"

    package let catalog: FakePhotoCatalog
    package let process: ServiceProcess
    /// The broker social consumes from, for a gateway started beside it.
    package let kafkaBrokers: String
    private let blobs: URL

    /// - Parameter name: names the run's blob folder and projection group.
    package static func start(_ name: String) async throws -> BenchmarkSocial {
        let catalog = FakePhotoCatalog(images: [:])
        try await catalog.start()
        let database = try await TestPostgres.shared.makeDatabase()
        let databaseURL = try await database.makeServiceRole(schema: "social", password: "bench").url
        let kafka = try await TestKafka.shared.running()
        let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(getpid())")
        let process = try await ServiceProcess(
            "social",
            environment: [
                "DATABASE_URL": databaseURL, "LOG_LEVEL": "error", "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false",
                "SOCIAL_JWKS_URL": catalog.baseURL + "/jwks.json", "SOCIAL_JWT_ISSUER": issuer, "SOCIAL_BLOB_DIR": blobs.path,
                "RENDER_MEDIA_KEY": "media-signing-key-for-benchmarks-0123456789", "SOCIAL_PHOTO_CATALOG_URL": catalog.baseURL,
                "SOCIAL_PROJECTION_GROUP": "\(name)-\(getpid())",
            ]
        )
        return BenchmarkSocial(catalog: catalog, process: process, kafkaBrokers: kafka.bootstrapServers, blobs: blobs)
    }

    /// An access token of `user`, as auth would sign it.
    package func token(_ user: UUID) throws -> String {
        try testAccessToken(user: user, key: catalog.key, issuer: Self.issuer)
    }

    /// Stops social and the catalog, and removes the blob folder.
    package func stop() async {
        await process.stop()
        await catalog.stop()
        try? FileManager.default.removeItem(at: blobs)
    }
}
