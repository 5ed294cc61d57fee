import Foundation
import LocalStack
import Logging
import PostgresNIO
import TestSupport
import Testing

/// The erasure checker finds a user's id wherever a service could keep it — a `uuid` column, text,
/// JSON, an array, a blob's key in any letter case — and passes over the event bookkeeping only.
@Suite("Erasure check")
struct ErasureCheckTests {
    @Test func findsTheIdInEveryKindOfColumnAndBlobAndPassesOverTheOutbox() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        let (ana, ben) = (UUID(), UUID())
        let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("erasure-check-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: blobs) }
        for key in ["posts/\(ana.uuidString)/a.jpg", "\(ana.uuidString.lowercased())/uploads/b.jpeg", "posts/\(ben.uuidString)/c.jpg"] {
            let file = blobs.appendingPathComponent(key)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data([1, 2, 3]).write(to: file)
        }
        try await database.withClient { client in
            for statement in [
                "CREATE SCHEMA social", "CREATE SCHEMA tracking",
                "CREATE TABLE social.likes (user_id uuid, photo_key text)",
                "CREATE TABLE tracking.orders (id uuid, customer_id uuid, status_history jsonb, notes text, parties uuid[])",
                "CREATE TABLE social.outbox (id uuid, payload jsonb)",
                "ALTER TABLE social.likes ENABLE ROW LEVEL SECURITY", "ALTER TABLE social.likes FORCE ROW LEVEL SECURITY",
                "INSERT INTO social.likes VALUES ('\(ana.uuidString.lowercased())', 'unsplash:x'), ('\(ben.uuidString.lowercased())', 'unsplash:x')",
                """
                INSERT INTO tracking.orders VALUES (gen_random_uuid(), NULL, '[{"by":{"userId":"\(ana.uuidString)"}}]', 'for \(ana.uuidString.lowercased())',
                    ARRAY['\(ana.uuidString.lowercased())'::uuid])
                """,
                "INSERT INTO social.outbox VALUES (gen_random_uuid(), '{\"userId\":\"\(ana.uuidString.lowercased())\"}')",
            ] {
                try await client.query(PostgresQuery(unsafeSQL: statement))
            }
        }
        let found = try await database.erasureFindings(of: ana, blobFolders: [blobs]).map(\.place)
        #expect(
            found == [
                "social.likes.user_id", "tracking.orders.status_history", "tracking.orders.notes", "tracking.orders.parties",
                "blob \(blobs.path)/\(ana.uuidString.lowercased())/uploads/b.jpeg", "blob \(blobs.path)/posts/\(ana.uuidString)/a.jpg",
            ]
        )
        try await database.withClient { client in
            for statement in ["DELETE FROM social.likes WHERE user_id = '\(ana.uuidString.lowercased())'", "DELETE FROM tracking.orders"] {
                try await client.query(PostgresQuery(unsafeSQL: statement))
            }
        }
        try FileManager.default.removeItem(at: blobs.appendingPathComponent(ana.uuidString.lowercased()))
        try FileManager.default.removeItem(at: blobs.appendingPathComponent("posts/\(ana.uuidString)"))
        #expect(try await database.erasureFindings(of: ana, blobFolders: [blobs]).isEmpty)
        #expect(try await database.erasureFindings(of: ben, blobFolders: [blobs]).map(\.place).count == 2)
    }
}
