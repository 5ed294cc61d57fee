import Database
import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

/// What a service logs when Postgres refuses a statement: enough to act on (PostgresNIO's own
/// description is one fixed sentence), never the values the statement carried.
@Suite("Postgres errors in logs")
struct ErrorDiagnosisTests {
    @Test func sayWhatFailedWhereWithoutTheBoundValues() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        let secret = "hunter2-\(UInt64.random(in: 0...UInt64.max))"
        let failure: any Error = try await database.withClient { client in
            try await client.query("CREATE TABLE accounts (email text PRIMARY KEY, secret text NOT NULL)")
            try await client.query("INSERT INTO accounts VALUES ('a@example.com', \(secret))")
            do {
                try await client.query("INSERT INTO accounts VALUES ('a@example.com', \(secret))")
                Issue.record("the second insert was accepted")
                return CancellationError()
            } catch {
                return error
            }
        }
        let logged = failure.logDescription
        #expect(logged.contains("Postgres 23505: duplicate key value violates unique constraint \"accounts_pkey\""))
        #expect(logged.contains("table accounts") && logged.contains("in INSERT INTO accounts VALUES ('a@example.com', $1)"))
        #expect(!logged.contains(secret), "a bound value reached the log")
        #expect(!logged.contains("Key (email)"), "the server's DETAIL quotes the row")
        #expect("\(failure)".contains("Generic description"), "PostgresNIO's own description changed; is the diagnosis still needed?")
    }
}
