import ArgumentParser
import Database
import Foundation
import LocalStack
import Logging
import PostgresNIO

/// `splash erasure-check <user-id>`: lists anything left of a deleted account in the services'
/// schemas and blob folders (`ErasureCheck`); exits 1 when something is.
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

    @Option(name: .customLong("blob-dir"), help: "A file blob store's folder to walk (repeatable). Default: <data-dir>/blobs.")
    var blobDirectories: [String] = []

    func run() async throws {
        guard let id = UUID(uuidString: user) else { throw ValidationError("\(user) is not a user id (a UUID)") }
        let root = URL(fileURLWithPath: data.dataDir, isDirectory: true).standardizedFileURL
        let folders = (blobDirectories.isEmpty ? [root.appendingPathComponent("blobs").path] : blobDirectories).map {
            URL(fileURLWithPath: $0, isDirectory: true)
        }
        let url: String
        if let databaseURL {
            url = databaseURL
        } else {
            let password = try SecretStore(directory: root.appendingPathComponent("secrets")).secret(PostgresCluster.superuser)
            url = LocalDatabase(port: postgresPort).url(role: PostgresCluster.superuser, password: password)
        }
        let logger = cliLogger()
        let client = PostgresClient(configuration: try PostgresURL.parse(url), backgroundLogger: logger)
        let findings = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await client.withConnection { connection in
                try await ErasureCheck(blobFolders: folders).findings(of: id, on: connection, logger: logger)
            }
        }
        guard !findings.isEmpty else {
            say("Nothing of \(id.uuidString.lowercased()) is left in \(ErasureCheck().schemas.joined(separator: ", ")) or the blob folders.")
            return
        }
        say("Left of \(id.uuidString.lowercased()):")
        for finding in findings { say("  \(finding)") }
        throw ExitCode(1)
    }
}
