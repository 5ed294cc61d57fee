import Crypto
import Foundation
import Identity
import Logging
import Mail
import PostgresNIO

/// Mailed one-time codes and links (`one_time_tokens`): issued with their mail in one transaction,
/// stored only as hashes, good once and for `lifetime`, and guarded against guessing (five wrong
/// codes for an address lock its codes for 15 minutes) and against spraying mail (one mail of a
/// kind per address per minute, counted whether or not the address has an account).
///
/// A code is looked up by its hash (SHA-256 of the address and the code), so the database compares
/// digests, never the code itself: how long a comparison takes tells nothing about the code.
struct OneTimeCodes: Sendable {
    typealias Kind = AuthMailer.Kind

    /// A PKCE challenge a request carried; the flow it starts ends with its verifier.
    struct Challenge: Sendable, Equatable {
        var value: String
        var method: Method

        enum Method: String, Sendable { case s256, plain }

        /// Whether `verifier` is the one this challenge was made from.
        func isMet(by verifier: String) -> Bool {
            switch method {
            case .plain: verifier == value
            case .s256: Base64URL.encode(SHA256.hash(data: Data(verifier.utf8))) == value
            }
        }
    }

    /// What a redeemed code or link was for.
    struct Redeemed: Sendable {
        var userID: UUID
        var kind: Kind
        var challenge: Challenge?
        var redirectTo: String?
    }

    let mailer: AuthMailer
    let outbox: MailOutbox
    let lifetime: Duration
    var mailInterval: Duration = .seconds(60)
    let logger: Logger

    static let lockAfterFailures = 5
    static let lockDuration: Duration = .seconds(15 * 60)

    /// Counts a mail of `kind` to `address` against the once-a-minute limit, on the caller's
    /// transaction.
    /// - Throws: `AuthError.overEmailSendRateLimit` when one went less than a minute ago.
    func admitMail(_ kind: String, to address: String, on connection: PostgresConnection) async throws {
        let interval = Double(mailInterval.components.seconds)
        let rows = try await connection.query(
            """
            INSERT INTO mail_sends (address, kind, sent_at) VALUES (\(address), \(kind), clock_timestamp())
            ON CONFLICT (address, kind) DO UPDATE SET sent_at = excluded.sent_at
            WHERE mail_sends.sent_at <= clock_timestamp() - \(interval) * interval '1 second'
            RETURNING 1
            """,
            logger: logger
        )
        if try await rows.collect().isEmpty {
            throw AuthError.overEmailSendRateLimit(retryAfterSeconds: Int(interval))
        }
    }

    /// Mails `address` (user `userID`'s) a new code and link of `kind`; those of that kind mailed
    /// before stop working.
    ///
    /// Without a user (an address with no account), the same work is done — the code, its hashes,
    /// the mail's words, the same statements in the same round trips — and nothing is stored or
    /// sent, so the answer takes as long either way (as sign-in checks a dummy hash).
    func mail(
        _ kind: Kind,
        to address: String,
        user: UUID?,
        challenge: Challenge?,
        redirectTo: String,
        change: (from: String, to: String)? = nil,
        on connection: PostgresConnection
    ) async throws {
        let code = Self.newCode()
        let linkToken = OpaqueToken.random()
        let id = UUID()
        let real = user != nil
        let userID = user ?? UUID()
        // One statement: the codes of this kind mailed before voided, the new one stored (both see
        // the statement's snapshot, so the new row is not among those voided).
        try await connection.query(
            """
            WITH voided AS (
                DELETE FROM one_time_tokens WHERE user_id = \(userID) AND kind = \(kind.rawValue)
            ), issued AS (
                INSERT INTO one_time_tokens (id, user_id, kind, address, code_hash, link_hash, code_challenge, code_challenge_method, redirect_to, expires_at)
                SELECT \(id), \(userID), \(kind.rawValue), \(address), \(Self.codeHash(code, address: address)), \(OpaqueToken.digest(linkToken)),
                       \(challenge?.value), \(challenge?.method.rawValue), \(redirectTo),
                       clock_timestamp() + \(Double(lifetime.components.seconds)) * interval '1 second'
                WHERE \(real)
                RETURNING user_id, kind
            )
            UPDATE users SET confirmation_sent_at = now() FROM issued WHERE users.id = issued.user_id AND issued.kind = 'signup'
            """,
            logger: logger
        )
        let link = mailer.link(token: linkToken, kind: kind, redirectTo: redirectTo)
        let mail = mailer.mail(kind, id: id, to: address, code: code, link: link, email: change?.from, newEmail: change?.to)
        try await outbox.append(mail, on: connection, logger: logger, rehearsal: !real)
    }

    /// Spends the code mailed to `address` for one of `kinds`; `nil` when there is none such (wrong,
    /// spent, expired, or the address's codes are locked).
    func redeem(code: String, address: String, kinds: [Kind], on connection: PostgresConnection) async throws -> Redeemed? {
        let locked = try await connection.query(
            "SELECT 1 FROM code_failures WHERE address = \(address) AND locked_until > clock_timestamp()",
            logger: logger
        )
        guard try await locked.collect().isEmpty else { return nil }
        let kindNames = kinds.map(\.rawValue)
        let rows = try await connection.query(
            """
            DELETE FROM one_time_tokens WHERE id = (
                SELECT id FROM one_time_tokens
                WHERE address = \(address) AND code_hash = \(Self.codeHash(code, address: address)) AND kind = ANY(\(kindNames))
                  AND expires_at > clock_timestamp()
                ORDER BY created_at DESC LIMIT 1 FOR UPDATE
            )
            RETURNING \(unescaped: Self.spentColumns)
            """,
            logger: logger
        )
        return try await Self.redeemed(rows)
    }

    /// Spends the link token `token` for one of `kinds`; `nil` when there is none such.
    func redeem(link token: String, kinds: [Kind], on connection: PostgresConnection) async throws -> Redeemed? {
        let kindNames = kinds.map(\.rawValue)
        let rows = try await connection.query(
            """
            DELETE FROM one_time_tokens
            WHERE link_hash = \(OpaqueToken.digest(token)) AND kind = ANY(\(kindNames)) AND expires_at > clock_timestamp()
            RETURNING \(unescaped: Self.spentColumns)
            """,
            logger: logger
        )
        return try await Self.redeemed(rows)
    }

    private static let spentColumns = "user_id, kind, code_challenge, code_challenge_method, redirect_to"

    private static func redeemed(_ rows: PostgresRowSequence) async throws -> Redeemed? {
        guard let row = try await rows.collect().first else { return nil }
        let (userID, kind, challenge, method, redirectTo) = try row.decode((UUID, String, String?, String?, String?).self)
        return Redeemed(
            userID: userID,
            kind: Kind(rawValue: kind) ?? .magiclink,
            challenge: challenge.flatMap { value in method.flatMap(Challenge.Method.init(rawValue:)).map { Challenge(value: value, method: $0) } },
            redirectTo: redirectTo
        )
    }

    /// Counts a wrong code for `address`, on a transaction of its own (the request fails after it).
    func recordFailure(for address: String, on connection: PostgresConnection) async throws {
        let window = Double(Self.lockDuration.components.seconds)
        try await connection.query(
            """
            INSERT INTO code_failures (address, failures, first_at) VALUES (\(address), 1, clock_timestamp())
            ON CONFLICT (address) DO UPDATE SET
                failures = CASE WHEN code_failures.first_at > clock_timestamp() - \(window) * interval '1 second'
                                THEN code_failures.failures + 1 ELSE 1 END,
                first_at = CASE WHEN code_failures.first_at > clock_timestamp() - \(window) * interval '1 second'
                                THEN code_failures.first_at ELSE clock_timestamp() END,
                locked_until = CASE WHEN code_failures.first_at > clock_timestamp() - \(window) * interval '1 second'
                                     AND code_failures.failures + 1 >= \(Self.lockAfterFailures)
                                THEN clock_timestamp() + \(window) * interval '1 second' ELSE code_failures.locked_until END
            """,
            logger: logger
        )
    }

    static func newCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(format: "%06d", Int.random(in: 0..<1_000_000, using: &generator))
    }

    static func codeHash(_ code: String, address: String) -> Data {
        OpaqueToken.digest("\(address):\(code)")
    }
}
