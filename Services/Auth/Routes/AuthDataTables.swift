import DataAPI
import Identity
import Logging
import PostgresNIO

/// auth's views under `/rest/v1`: `profiles` (each user's public fields) and `recent_signups`,
/// read-only (a profile changes through `PUT /auth/v1/user`). Anyone may read them, so they run as
/// the public read-outs do (`app.auth_flow`), over sources that name the public fields alone.
enum AuthDataTables {
    static func tables(client: PostgresClient, logger: Logger) -> [DataTable] {
        let read = client.dataReader(logger: logger) { _ in [(name: "app.auth_flow", value: "on")] }
        let profiles = TableDescription(
            name: "profiles",
            source:
                "(SELECT id, user_metadata ->> 'username' AS username, user_metadata ->> 'avatar_url' AS avatar_url, created_at FROM users) profiles",
            columns: [.init("id", .uuid), .init("username", .text), .init("avatar_url", .text), .init("created_at", .timestamptz)],
            primaryKey: ["id"],
            defaultOrder: [.init(column: "created_at", descending: true), .init(column: "id", descending: true)]
        )
        let recent = TableDescription(
            name: "recent_signups",
            source: "(SELECT id, user_metadata ->> 'username' AS username, created_at FROM users) recent_signups",
            columns: [.init("username", .text), .init("created_at", .timestamptz)],
            primaryKey: [],
            defaultOrder: [.init(column: "created_at", descending: true)]
        )
        return [DataTable(profiles, read: read), DataTable(recent, read: read)]
    }
}
