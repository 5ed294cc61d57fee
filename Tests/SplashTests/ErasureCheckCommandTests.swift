import AsyncHTTPClient
import Blobs
import Foundation
import LocalStack
import PostgresNIO
import S3Blobs
import TestSupport
import Testing

/// `splash erasure-check <user-id>`, run as the real binary: a row and blobs (a folder and an S3
/// bucket on moto) naming the person are listed and the exit status is 1; someone of whom nothing
/// is kept passes with 0.
@Suite struct ErasureCheckCommandTests {
    @Test func listsWhatIsLeftInTheDatabaseAFolderAndABucketAndFailsUntilNothingIs() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        let (ana, ben) = (UUID(), UUID())
        try await database.withClient { client in
            for statement in [
                "CREATE SCHEMA social", "CREATE TABLE social.likes (user_id uuid, photo_key text)",
                "INSERT INTO social.likes VALUES ('\(ana.uuidString.lowercased())', 'unsplash:x')",
            ] {
                try await client.query(PostgresQuery(unsafeSQL: statement))
            }
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("erasure-command-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await FileBlobStore(root: folder).put(BlobKey("\(ana.uuidString.lowercased())/uploads/a.jpeg")!, bytes: [1, 2, 3])

        let moto = try await MotoServer()
        defer { moto.stop() }
        let bucket = "erasure-\(UUID().uuidString.prefix(8).lowercased())"
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: S3BlobStore.httpConfiguration)
        let settings = S3Settings(
            endpoint: moto.endpoint,
            region: "us-east-1",
            bucket: bucket,
            accessKeyID: "testing",
            secretAccessKey: "testing",
            requestTimeout: .seconds(20),
            attempts: 3
        )
        let s3 = S3BlobStore(settings: settings, http: http, logger: .init(label: "erasure-command-test"))
        try await s3.createBucketIfMissing()
        try await s3.put(BlobKey("posts/\(ana.uuidString)/b.jpg")!, bytes: [4])
        try await http.shutdown()

        let environment = [
            "BLOB_STORE": "s3", "S3_ENDPOINT": moto.endpoint.absoluteString, "S3_BUCKET": bucket, "S3_ACCESS_KEY_ID": "testing",
            "S3_SECRET_ACCESS_KEY": "testing",
        ]
        func check(_ user: UUID) async throws -> (status: Int32, output: String) {
            let command = ProcessCommand(
                SplashUp.executable,
                ["erasure-check", user.uuidString, "--database-url", database.url, "--blob-dir", folder.path],
                environment: environment
            )
            do {
                return (0, try await command.runToCompletion())
            } catch let failure as ProcessCommand.Failure {
                return (failure.status, failure.output)
            }
        }
        let left = try await check(ana)
        #expect(left.status == 1, "\(left.output)")
        for place in [
            "social.likes.user_id", "blob s3://\(bucket)/posts/\(ana.uuidString)/b.jpg",
            "blob \(folder.path)/\(ana.uuidString.lowercased())/uploads/a.jpeg",
        ] {
            #expect(left.output.contains(place), "\(place) in \(left.output)")
        }
        let nothing = try await check(ben)
        #expect(nothing.status == 0 && nothing.output.contains("Nothing of \(ben.uuidString.lowercased()) is left"), "\(nothing.output)")
    }
}
