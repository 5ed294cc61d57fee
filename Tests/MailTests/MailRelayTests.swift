import AsyncSignals
import Database
import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

@testable import Mail

/// The mail outbox and its relay against a real Postgres and a real SMTP server.
@Suite("Mail outbox and relay") struct MailRelayTests {
    static let schema = "mailtest"
    static let logger = ServiceHarness.quietLogger("mail-test")

    /// A fresh database with the outbox table in `mailtest`, for `body`.
    static func withOutbox(_ body: @Sendable (PostgresClient, MailOutbox) async throws -> Void) async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        try await database.withClient { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"), logger: logger)
            try await MailOutbox.migrate(schema: schema, on: client, logger: logger)
            try await body(client, try MailOutbox(schema: schema, wakeup: Wakeup()))
        }
    }

    static func mail(to recipient: MailRecipient, id: UUID = UUID()) -> OutgoingMail {
        OutgoingMail(
            id: id,
            kind: "receipt",
            recipient: recipient,
            subject: "Your receipt",
            text: "Total 25.80 €",
            html: "<p>Total <b>25.80 €</b></p>"
        )
    }

    static func rows(_ client: PostgresClient) async throws -> [(status: String, text: String?, address: String?, attempts: Int, error: String?)] {
        let rows = try await client.query(
            PostgresQuery(unsafeSQL: "SELECT status, text_body, to_address, attempts, error FROM \(schema).mail_outbox ORDER BY id"),
            logger: logger
        )
        var all: [(String, String?, String?, Int, String?)] = []
        for try await row in rows.decode((String, String?, String?, Int, String?).self) { all.append(row) }
        return all
    }

    @Test func mailIsQueuedOnlyWithItsTransactionDeliveredOnceAndItsBodyCleared() async throws {
        let server = try await SMTPTestServer()
        defer { server.stop() }
        try await Self.withOutbox { client, outbox in
            struct Rollback: Error {}
            await #expect(throws: Rollback.self) {
                try await client.withTransaction(settings: [], logger: Self.logger) { connection in
                    try await outbox.append(Self.mail(to: .address("aino@example.com")), on: connection, logger: Self.logger)
                    throw Rollback()
                }
            }
            #expect(try await Self.rows(client).isEmpty)
            let id = UUID()
            for _ in 0..<2 {
                // The same mail queued twice (a retried transaction) is one mail.
                try await client.withTransaction(settings: [], logger: Self.logger) { connection in
                    try await outbox.append(Self.mail(to: .address("aino@example.com"), id: id), on: connection, logger: Self.logger)
                }
            }
            let endpoint = SMTPEndpoint(url: URL(string: server.url)!, caFile: server.authority.caFile)
            let relay = MailRelay(
                outbox: outbox,
                client: client,
                destination: .smtp(SMTPClient(endpoint: endpoint, sender: MailSender("shop@splash.example")!)),
                logger: Self.logger
            )
            #expect(try await relay.deliverDue() == 1)
            #expect(try await relay.deliverDue() == 0)
            #expect(server.received.count == 1)
            #expect(server.received.first?.data.contains("Message-ID: <\(id.uuidString.lowercased())@splash.example>") == true)
            let row = try #require(try await Self.rows(client).first)
            #expect(row.status == "sent")
            #expect(row.text == nil, "a delivered mail's body is not kept")
        }
    }

    @Test func mailWaitsWhileSMTPIsDownAndGoesWhenItReturns() async throws {
        let server = try await SMTPTestServer()
        defer { server.stop() }
        try await Self.withOutbox { client, outbox in
            let endpoint = SMTPEndpoint(url: URL(string: server.url)!, caFile: server.authority.caFile)
            let relay = MailRelay(
                outbox: outbox,
                client: client,
                destination: .smtp(SMTPClient(endpoint: endpoint, sender: MailSender("shop@splash.example")!)),
                firstRetry: .milliseconds(50),
                logger: Self.logger
            )
            // One mail first: the relay's SMTP session is open when the server goes.
            try await client.withTransaction(settings: [], logger: Self.logger) { connection in
                try await outbox.append(Self.mail(to: .address("aino@example.com")), on: connection, logger: Self.logger)
            }
            #expect(try await relay.deliverDue() == 1)
            server.stop()
            try await client.withTransaction(settings: [], logger: Self.logger) { connection in
                try await outbox.append(Self.mail(to: .address("eero@example.com")), on: connection, logger: Self.logger)
            }
            #expect(try await relay.deliverDue() == 1)
            let waiting = try #require(try await Self.rows(client).last)
            #expect(waiting.status == "pending" && waiting.attempts == 1 && waiting.error != nil && waiting.text != nil)
            try await server.start()
            try await eventually("the mail goes once SMTP is back", timeout: .seconds(10)) {
                try await relay.deliverDue()
                return server.received.count == 2
            }
            #expect(try await Self.rows(client).map(\.status) == ["sent", "sent"])
        }
    }

    @Test func theCatcherKeepsMailAndAUserIsLookedUpWhenItIsSent() async throws {
        try await Self.withOutbox { client, outbox in
            let known = UUID()
            let gone = UUID()
            let relay = MailRelay(outbox: outbox, client: client, destination: .catcher, logger: Self.logger) { user in
                user == known ? "known@example.com" : nil
            }
            try await client.withTransaction(settings: [], logger: Self.logger) { connection in
                try await outbox.append(Self.mail(to: .user(known)), on: connection, logger: Self.logger)
                try await outbox.append(Self.mail(to: .user(gone)), on: connection, logger: Self.logger)
            }
            await #expect(throws: MailError.invalidAddress("not an address")) {
                try await client.withTransaction(settings: [], logger: Self.logger) { connection in
                    try await outbox.append(Self.mail(to: .address("not an address")), on: connection, logger: Self.logger)
                }
            }
            #expect(try await relay.deliverDue() == 2)
            let rows = try await Self.rows(client)
            #expect(rows.map(\.status) == ["caught", "failed"])
            #expect(rows[0].address == "known@example.com" && rows[0].text == "Total 25.80 €", "the catcher keeps what it caught")
            #expect(rows[1].error == "the user has no address")
        }
    }
}
