import AsyncSignals
import Database
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle

/// Where a relay's mail goes: an SMTP server, or (the local stack, without `SMTP_URL`) the
/// catcher — the outbox keeps the mail, bodies and all, for the console to show.
package enum MailDestination: Sendable {
    case smtp(SMTPClient)
    case catcher
}

/// Delivers a service's mail outbox: claims what is due under a lease (replicas share the table;
/// a replica that dies leaves its claims to the others), looks up a user's address when the mail
/// names a user, sends, and clears a sent mail's bodies. A failed send waits — 5 s, doubling to 10
/// minutes, jittered — and is tried again (SMTP down: the mail goes when it returns) for up to
/// `giveUpAfter`; a recipient the server refuses for good, or one with no address, is `failed`.
package struct MailRelay: Service {
    let outbox: MailOutbox
    let client: PostgresClient
    let destination: MailDestination
    /// The address of a `MailRecipient.user`; `nil` when there is none (the user is gone).
    let resolve: @Sendable (UUID) async throws -> String?
    var batch = 20
    var pollInterval: Duration = .seconds(5)
    let backoff: Backoff
    var giveUpAfter: Duration = .seconds(3 * 86_400)
    let logger: Logger

    package init(
        outbox: MailOutbox,
        client: PostgresClient,
        destination: MailDestination,
        firstRetry: Duration = .seconds(5),
        logger: Logger,
        resolve: @escaping @Sendable (UUID) async throws -> String? = { _ in nil }
    ) {
        self.outbox = outbox
        self.client = client
        self.destination = destination
        self.backoff = Backoff(base: firstRetry, maximum: .seconds(600))
        self.logger = logger
        self.resolve = resolve
    }

    package func run() async throws {
        await withGracefulShutdownHandler {
            while !Task.isShuttingDownGracefully {
                do {
                    if try await deliverDue() == 0 { await outbox.wakeup.wait(upTo: pollInterval) }
                } catch {
                    logger.warning("Mail round failed; trying again", metadata: ["error": "\(String(reflecting: error))"])
                    try? await Task.sleep(for: pollInterval)
                }
            }
        } onGracefulShutdown: {
            outbox.wakeup.signal()
        }
    }

    struct Claimed: Sendable {
        var id: Int64
        var mailID: UUID
        var recipient: MailRecipient
        var message: (subject: String, text: String, html: String)
        var attempts: Int
        var age: Duration
    }

    /// Sends one batch of due mail, one after another (SMTP servers take a few connections).
    /// - Returns: how many it took.
    @discardableResult
    package func deliverDue() async throws -> Int {
        let due = try await claim()
        for mail in due {
            try await finish(mail, await deliver(mail))
        }
        return due.count
    }

    enum Outcome {
        case sent
        /// Kept by the catcher, under the address it was for.
        case caught(String)
        case retry(String)
        case failed(String)
    }

    private func deliver(_ mail: Claimed) async -> Outcome {
        do {
            let address: String
            switch mail.recipient {
            case .address(let to): address = to
            case .user(let user):
                guard let found = try await resolve(user) else { return .failed("the user has no address") }
                address = found
            }
            let message = MailMessage(to: address, subject: mail.message.subject, text: mail.message.text, html: mail.message.html)
            switch destination {
            case .catcher:
                guard MailMessage.isAddress(address) else { return .failed("not a mail address") }
                return .caught(address)
            case .smtp(let smtp):
                try await smtp.send(message, id: mail.mailID)
                return .sent
            }
        } catch let error as MailError where !error.isTransient {
            return .failed(error.description)
        } catch {
            return .retry(String(describing: error))
        }
    }

    /// One statement (the outbox has no row-level security to set up for): no transaction of its own.
    private func claim() async throws -> [Claimed] {
        let rows = try await client.query(
            """
            UPDATE \(unescaped: outbox.table) SET status = 'sending', attempts = attempts + 1,
                   lease_until = clock_timestamp() + interval '2 minutes'
            WHERE id IN (
                SELECT id FROM \(unescaped: outbox.table)
                WHERE (status = 'pending' AND next_attempt_at <= clock_timestamp()) OR (status = 'sending' AND lease_until <= clock_timestamp())
                ORDER BY next_attempt_at LIMIT \(batch) FOR UPDATE SKIP LOCKED
            )
            RETURNING id, mail_id, to_address, to_user, subject, coalesce(text_body, ''), coalesce(html_body, ''), attempts,
                      extract(epoch FROM clock_timestamp() - created_at)::float8
            """,
            logger: logger
        )
        var claimed: [Claimed] = []
        for try await (id, mailID, address, user, subject, text, html, attempts, age) in rows.decode(
            (Int64, UUID, String?, UUID?, String, String, String, Int, Double).self
        ) {
            // The table's check: one of the two is there.
            guard let recipient: MailRecipient = address.map(MailRecipient.address) ?? user.map(MailRecipient.user) else { continue }
            claimed.append(
                Claimed(id: id, mailID: mailID, recipient: recipient, message: (subject, text, html), attempts: attempts, age: .seconds(age))
            )
        }
        return claimed
    }

    /// One statement, as `claim`.
    private func finish(_ mail: Claimed, _ outcome: Outcome) async throws {
        switch outcome {
        case .sent:
            // Delivered: the bodies (a code, a link) are kept no longer.
            try await client.query(
                """
                UPDATE \(unescaped: outbox.table) SET status = 'sent', text_body = NULL, html_body = NULL, error = NULL,
                       lease_until = NULL, finished_at = clock_timestamp()
                WHERE id = \(mail.id)
                """,
                logger: logger
            )
        case .caught(let address):
            try await client.query(
                """
                UPDATE \(unescaped: outbox.table) SET status = 'caught', lease_until = NULL, finished_at = clock_timestamp(),
                       to_address = \(address)
                WHERE id = \(mail.id)
                """,
                logger: logger
            )
        case .failed(let reason):
            logger.error("Mail could not be delivered", metadata: ["mail.id": "\(mail.mailID)", "error": "\(reason)"])
            try await client.query(
                """
                UPDATE \(unescaped: outbox.table) SET status = 'failed', text_body = NULL, html_body = NULL, error = \(reason),
                       lease_until = NULL, finished_at = clock_timestamp()
                WHERE id = \(mail.id)
                """,
                logger: logger
            )
        case .retry(let reason):
            let giveUp = mail.age >= giveUpAfter
            let delay = backoff.delay(attempt: mail.attempts).seconds
            if giveUp { logger.error("Mail given up after retrying", metadata: ["mail.id": "\(mail.mailID)", "error": "\(reason)"]) }
            try await client.query(
                """
                UPDATE \(unescaped: outbox.table) SET
                    status = CASE WHEN \(giveUp) THEN 'failed' ELSE 'pending' END,
                    text_body = CASE WHEN \(giveUp) THEN NULL ELSE text_body END,
                    html_body = CASE WHEN \(giveUp) THEN NULL ELSE html_body END,
                    finished_at = CASE WHEN \(giveUp) THEN clock_timestamp() END,
                    next_attempt_at = clock_timestamp() + make_interval(secs => \(delay)), error = \(reason), lease_until = NULL
                WHERE id = \(mail.id)
                """,
                logger: logger
            )
        }
    }
}
