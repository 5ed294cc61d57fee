import AsyncSignals
import Database
import Foundation
import Logging
import PostgresNIO

/// Who a mail goes to: an address, or a user whose address is looked up when it is sent (so the
/// service keeps no address, and a changed one is used).
package enum MailRecipient: Sendable, Equatable {
    case address(String)
    case user(UUID)
}

/// A mail to queue: its id (its Message-ID, and what makes queueing it twice one mail), what kind
/// it is (for the log), who it is for, and its words.
package struct OutgoingMail: Sendable, Equatable {
    package var id: UUID
    package var kind: String
    package var recipient: MailRecipient
    package var subject: String
    package var text: String
    package var html: String

    package init(id: UUID, kind: String, recipient: MailRecipient, subject: String, text: String, html: String) {
        self.id = id
        self.kind = kind
        self.recipient = recipient
        self.subject = subject
        self.text = text
        self.html = html
    }
}

/// A service's mail outbox (`<schema>.mail_outbox`): mail is queued in the transaction of what it
/// tells — it exists if and only if that commits — and the relay is woken once it has.
package struct MailOutbox: Sendable {
    let schema: String
    let wakeup: Wakeup

    /// - Throws: `MigrationError.invalidSchemaName` unless `schema` is a plain lowercase identifier.
    package init(schema: String, wakeup: Wakeup) throws {
        try MigrationRunner.checkIdentifier(schema)
        self.schema = schema
        self.wakeup = wakeup
    }

    /// Creates or updates the table in `schema` (its own migration ledger, `mail_migrations`);
    /// safe to run from several replicas at once.
    package static func migrate(schema: String, on client: PostgresClient, logger: Logger) async throws {
        let migrations = try Migration.load(bundle: .module, subdirectory: "Migrations")
        _ = try await MigrationRunner(schema: schema, ledger: "mail_migrations", migrations: migrations).run(on: client, logger: logger)
    }

    /// Queues `mail` on `connection`'s transaction; a mail with the same id is queued once.
    ///
    /// `rehearsal`: the same statement runs but queues nothing, and the relay is woken alike — for
    /// a flow that must take the same time whether or not there is anyone to mail (auth's
    /// `/recover` for an unknown address).
    /// - Throws: `MailError.invalidAddress` for an address that is not one; the database's error.
    package func append(_ mail: OutgoingMail, on connection: PostgresConnection, logger: Logger, rehearsal: Bool = false) async throws {
        var address: String?
        var user: UUID?
        switch mail.recipient {
        case .address(let to):
            guard MailMessage.isAddress(to) else { throw MailError.invalidAddress(to) }
            address = to
        case .user(let id): user = id
        }
        try await connection.query(
            """
            INSERT INTO \(unescaped: table) (mail_id, kind, to_address, to_user, subject, text_body, html_body)
            SELECT \(mail.id), \(mail.kind), \(address), \(user), \(mail.subject), \(mail.text), \(mail.html) WHERE \(!rehearsal)
            ON CONFLICT (mail_id) DO NOTHING
            """,
            logger: logger
        )
        if let hooks = CommitHooks.current {
            hooks.afterCommit { [wakeup] in wakeup.signal() }
        }
    }

    var table: String { "\"\(schema)\".mail_outbox" }

    /// Removes every mail to `addresses` (any case) or to `user`, sent or not, on `connection`'s
    /// transaction: a deleted account's mail, which may carry its address and codes.
    /// - Returns: how many there were.
    @discardableResult
    package func erase(addresses: [String] = [], user: UUID?, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        let lowered = addresses.map { $0.lowercased() }
        let rows = try await connection.query(
            """
            WITH gone AS (
                DELETE FROM \(unescaped: table) WHERE lower(to_address) = ANY(\(lowered)) OR to_user = \(user) RETURNING 1
            )
            SELECT count(*) FROM gone
            """,
            logger: logger
        )
        return try await rows.collect().first?.decode(Int.self) ?? 0
    }

    /// The mail the catcher kept, newest first: to `address` (any case) or to anyone.
    package func caught(to address: String?, limit: Int, client: PostgresClient, logger: Logger) async throws -> [CaughtMail] {
        let rows = try await client.query(
            """
            SELECT mail_id, kind, to_address, subject, coalesce(text_body, ''), coalesce(html_body, ''), created_at
            FROM \(unescaped: table) WHERE status = 'caught' AND (\(address)::text IS NULL OR lower(to_address) = lower(\(address)))
            ORDER BY id DESC LIMIT \(limit)
            """,
            logger: logger
        )
        var caught: [CaughtMail] = []
        for try await (id, kind, to, subject, text, html, createdAt) in rows.decode((UUID, String, String, String, String, String, Date).self) {
            caught.append(CaughtMail(id: id, kind: kind, to: to, subject: subject, text: text, html: html, createdAt: createdAt))
        }
        return caught
    }
}

/// `{"items":[…]}`: the caught mail an admin API answers with (notify's and auth's).
package struct CaughtMailList: Encodable, Sendable {
    package var items: [CaughtMail]

    package init(items: [CaughtMail]) {
        self.items = items
    }
}

/// A mail as the local stack's catcher kept it, for the console (and an API that shows it).
package struct CaughtMail: Sendable, Equatable, Codable {
    package var id: UUID
    package var kind: String
    package var to: String
    package var subject: String
    package var text: String
    package var html: String
    package var createdAt: Date
}
