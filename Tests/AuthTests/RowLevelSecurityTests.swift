import Foundation
import PostgresNIO
import TestSupport
import Testing

@Suite("Row-level security on auth's user-owned tables")
struct RowLevelSecurityTests {
    @Test func theServiceRoleSeesOnlyTheRequestUsersRows() async throws {
        try await AuthHarness.with { auth in
            let ana = try await auth.signUp()
            let bob = try await auth.signUp()
            var configuration = auth.database.configuration
            configuration.username = auth.role
            configuration.password = AuthHarness.rolePassword
            let client = PostgresClient(configuration: configuration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                // As ana: her user, her session, nobody else's.
                let seen = try await client.withUserTransaction(userID: ana.userID, logger: .init(label: "rls")) { connection in
                    let users = try await connection.query("SELECT id::text FROM auth.users", logger: .init(label: "rls")).collect().map {
                        try $0.decode(String.self)
                    }
                    let sessions =
                        try await connection.query("SELECT count(*) FROM auth.sessions", logger: .init(label: "rls")).collect().first?.decode(
                            Int.self
                        ) ?? -1
                    let deleted = try await connection.query(
                        "DELETE FROM auth.sessions WHERE user_id = \(UUID(uuidString: bob.userID)!) RETURNING id",
                        logger: .init(label: "rls")
                    ).collect().count
                    return (users, sessions, deleted)
                }
                #expect(seen.0 == [ana.userID])
                #expect(seen.1 == 1)
                #expect(seen.2 == 0)
                // Without any setting, nothing at all.
                let none = try await client.query("SELECT count(*) FROM auth.users").collect().first?.decode(Int.self)
                #expect(none == 0)
            }
            #expect(try await auth.call(.get, "/user", bearer: bob.accessToken).status == 200)
        }
    }
}
