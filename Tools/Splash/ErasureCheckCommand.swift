import ArgumentParser
import AsyncHTTPClient
import Blobs
import Database
import Foundation
import LocalStack
import Logging
import PostgresNIO
import S3Blobs
import ServiceKit

/// `splash erasure-check <user-id>`: lists anything left of a deleted account in the services'
/// schemas and blob stores (`ErasureCheck`): the folders given, and the S3 bucket the environment
/// names as the services' (`BLOB_STORE=s3`, `S3_*`); exits 1 when something is.
struct ErasureCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erasure-check",
        abstract: "List anything left of a deleted user: rows of every service schema and blobs naming their id. Exits 1 when something is."
    )

    @Argument(help: "The deleted user's id.")
    var user: String

    @OptionGroup var data: DataDirectoryOption

    @Option(help: "Port of the local Postgres (127.0.0.1), reached as its superuser.")
    var postgresPort: Int = 5433

    @Option(help: "A postgres:// URL of a role that reads every schema, instead of the local stack's superuser.")
    var databaseURL: String?

    @Option(
        name: .customLong("blob-dir"),
        help: "A file blob store's folder to walk (repeatable). Default: <data-dir>/blobs, unless BLOB_STORE=s3 names a bucket (S3_*) instead."
    )
    var blobDirectories: [String] = []

    func run() async throws {
        guard let id = UUID(uuidString: user) else { throw ValidationError("\(user) is not a user id (a UUID)") }
        let root = URL(fileURLWithPath: data.dataDir, isDirectory: true).standardizedFileURL
        let logger = cliLogger()
        var stores: [(name: String, store: any BlobStore)] = []
        var s3Client: HTTPClient?
        let choice = try BlobStoreChoice(from: ConfigurationReader(ProcessInfo.processInfo.environment), folder: root)
        if case .s3(let settings) = choice {
            let (store, http) = try choice.make(logger: logger)
            stores.append(("s3://\(settings.bucket)", store))
            s3Client = http
        }
        let folders = blobDirectories.isEmpty && stores.isEmpty ? [root.appendingPathComponent("blobs").path] : blobDirectories
        for folder in folders { stores.append((folder, try FileBlobStore(root: URL(fileURLWithPath: folder, isDirectory: true)))) }
        let url: String
        if let databaseURL {
            url = databaseURL
        } else {
            let password = try SecretStore(directory: root.appendingPathComponent("secrets")).secret(PostgresCluster.superuser)
            url = LocalDatabase(port: postgresPort).url(role: PostgresCluster.superuser, password: password)
        }
        let client = PostgresClient(configuration: try PostgresURL.parse(url), backgroundLogger: logger)
        let check = ErasureCheck(blobStores: stores)
        let findings: [ErasureCheck.Finding]
        do {
            findings = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                return try await client.withConnection { connection in try await check.findings(of: id, on: connection, logger: logger) }
            }
            try? await s3Client?.shutdown()
        } catch {
            try? await s3Client?.shutdown()
            throw error
        }
        guard !findings.isEmpty else {
            say(
                "Nothing of \(id.uuidString.lowercased()) is left in \(check.schemas.joined(separator: ", ")) or \(stores.map(\.name).joined(separator: ", "))."
            )
            return
        }
        say("Left of \(id.uuidString.lowercased()):")
        for finding in findings { say("  \(finding)") }
        throw ExitCode(1)
    }
}
