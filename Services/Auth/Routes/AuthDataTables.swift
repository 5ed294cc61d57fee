import DataAPI
import Foundation
import Identity
import Logging
import PostgresNIO
import ServiceKit

/// auth's tables under `/rest/v1`: `profiles` (each user's public fields; the caller's own row
/// writable: `username`, `avatar_url`), `recent_signups` (read-only) and TrackBite's `users` (the
/// caller's own account; an admin's, every account), whose `hasCompletedOnboarding` the caller sets
/// once. Every write is `PUT /user`'s or `POST /user/onboarding`'s own code, with its rules and its
/// event, after the token's session is checked as those routes check it.
struct AuthDataTables {
    let accounts: Accounts
    let authenticator: BearerAuthenticator
    /// The public read-outs' reader (`app.auth_flow`), over sources that name public fields alone.
    let publicRead: DataReader
    /// The accounts' reader: as the caller, seeing every account only through `users`' source,
    /// which keeps to the caller's own unless they are an admin now.
    let accountRead: DataReader

    /// Where the gateway is reached (`AUTH_PUBLIC_URL`): an avatar stored there is shown sized.
    let publicURL: String

    init(client: PostgresClient, accounts: Accounts, authenticator: BearerAuthenticator, publicURL: String, logger: Logger) {
        self.accounts = accounts
        self.publicURL = publicURL
        self.authenticator = authenticator
        self.publicRead = client.dataReader(logger: logger) { _ in [(name: "app.auth_flow", value: "on")] }
        self.accountRead = client.dataReader(logger: logger) { caller in
            [(name: "app.auth_flow", value: "on"), (name: "app.user_id", value: caller.userID?.lowercased ?? "")]
        }
    }

    var tables: [DataTable] { [profiles, recentSignUps, users] }

    /// The SQL of a profile's `avatar_url` as shown: an avatar stored in Storage's public
    /// `avatars` bucket behind `publicURL` is its 256 px variant (a phone draws a 25 MB upload
    /// from 20 KB); any other URL is shown as written. Social shows post authors the same way
    /// (`Services/Social/README.md`, Storage).
    static func shownAvatar(_ publicURL: String) -> String {
        let stored = "\(publicURL)/storage/v1/object/public/avatars/".replacingOccurrences(of: "'", with: "''")
        let sized = "\(publicURL)/storage/v1/render/image/public/avatars/".replacingOccurrences(of: "'", with: "''")
        let written = "(user_metadata ->> 'avatar_url')"
        return """
            CASE WHEN starts_with(\(written), '\(stored)') THEN '\(sized)' || substr(\(written), \(stored.count + 1)) \
            || CASE WHEN strpos(\(written), '?') > 0 THEN '&' ELSE '?' END || 'width=256&height=256' ELSE \(written) END
            """
    }

    private var profiles: DataTable {
        let description = TableDescription(
            name: "profiles",
            source:
                "(SELECT id, user_metadata ->> 'username' AS username, \(Self.shownAvatar(publicURL)) AS avatar_url, created_at FROM users) profiles",
            columns: [
                .init("id", .uuid), .init("username", .text, writable: true), .init("avatar_url", .text, writable: true),
                .init("created_at", .timestamptz),
            ],
            primaryKey: ["id"],
            defaultOrder: [.init(column: "created_at", descending: true), .init(column: "id", descending: true)]
        )
        return DataTable(
            description,
            read: publicRead,
            writes: DataWrites(update: { [accounts, authenticator] key, changes, caller in
                // Anyone's profile is readable; only one's own is changed (another's: 0 rows).
                guard let session = try await Self.session(caller, authenticator), Self.id(key) == session.userID else { return false }
                do {
                    _ = try await accounts.update(session, Accounts.Changes(password: nil, metadata: changes))
                } catch AuthError.usernameTaken {
                    throw DataAPIError(
                        .conflict,
                        code: "23505",
                        message: "duplicate key value violates unique constraint \"users_username_key\"",
                        details: "The username is taken."
                    )
                } catch AuthError.validationFailed(let reason) {
                    throw DataAPIError(
                        .badRequest,
                        code: "23514",
                        message: "new row for relation \"profiles\" violates check constraint",
                        details: reason
                    )
                }
                return true
            })
        )
    }

    private var recentSignUps: DataTable {
        let description = TableDescription(
            name: "recent_signups",
            source: "(SELECT id, user_metadata ->> 'username' AS username, created_at FROM users) recent_signups",
            columns: [.init("username", .text), .init("created_at", .timestamptz)],
            primaryKey: [],
            defaultOrder: [.init(column: "created_at", descending: true)]
        )
        return DataTable(description, read: publicRead)
    }

    /// TrackBite's `users (id, email, role, hasCompletedOnboarding, created_at)`.
    private var users: DataTable {
        let description = TableDescription(
            name: "users",
            source: """
                (SELECT id, email, role, onboarded AS "hasCompletedOnboarding", created_at FROM users
                 WHERE id = request_user_id() OR (SELECT a.role FROM users a WHERE a.id = request_user_id()) = 'admin') users
                """,
            columns: [
                .init("id", .uuid), .init("email", .text, writable: true), .init("role", .text, writable: true),
                .init("hasCompletedOnboarding", .boolean, writable: true), .init("created_at", .timestamptz),
            ],
            primaryKey: ["id"],
            defaultOrder: [.init(column: "created_at", descending: true), .init(column: "id", descending: true)]
        )
        return DataTable(
            description,
            read: accountRead,
            writes: DataWrites(update: { [accounts, authenticator, accountRead] key, changes, caller in
                guard let session = try await Self.session(caller, authenticator), let id = Self.id(key) else { return false }
                let rows = try await accountRead(caller, [#"SELECT email, role, onboarded FROM users WHERE id = \#(id)"#])[0]
                guard let (email, role, onboarded) = try rows.first?.decode((String, String, Bool).self) else { return false }
                let unchanged: [String: JSONValue] = ["email": .string(email), "role": .string(role), "hasCompletedOnboarding": .bool(onboarded)]
                let refused = changes.keys.sorted().filter { name in
                    // Onboarding is completed once and for all; the address and the role change
                    // through their own flows (an address confirmed, a role set by an admin).
                    name == "hasCompletedOnboarding" && changes[name] == .bool(true) ? false : changes[name] != unchanged[name]
                }
                guard refused.isEmpty, id == session.userID || changes.allSatisfy({ unchanged[$0.key] == $0.value }) else {
                    throw DataAPIError.forbidden(
                        "permission denied to update \(refused.isEmpty ? "another user's account" : refused.joined(separator: ", ")) of users"
                    )
                }
                if changes["hasCompletedOnboarding"] == .bool(true), !onboarded {
                    _ = try await authenticator.withSession(session) { session, connection in
                        try await accounts.completeOnboarding(session, on: connection)
                    }
                }
                return true
            })
        )
    }

    /// The caller's session, checked as auth's own routes check it (signed out or idle too long:
    /// refused); `nil` for the anonymous caller.
    private static func session(_ caller: DataCaller, _ authenticator: BearerAuthenticator) async throws -> AuthenticatedSession? {
        guard let claims = caller.claims else { return nil }
        guard let user = claims.userID, let sessionID = UUID(uuidString: claims.sessionID) else {
            throw DataAPIError(.unauthorized, code: "PGRST301", message: "JWT could not be verified", details: "sub or session_id is not a UUID")
        }
        let session = AuthenticatedSession(claims: claims, userID: user, sessionID: sessionID)
        do {
            return try await authenticator.withSession(session) { session, _ in session }
        } catch let error as AuthError {
            throw DataAPIError(.unauthorized, code: "PGRST301", message: "JWT could not be verified", details: error.message)
        }
    }

    private static func id(_ key: [String: JSONValue]) -> UUID? {
        key["id"]?.stringValue.flatMap(UUID.init(uuidString:))
    }
}
