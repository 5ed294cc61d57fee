import Crypto
import Foundation
import Identity
import Synchronization

/// The provider token APNs authenticates notify with: an ES256 JWT naming the key (`kid`) and the
/// team (`iss`), signed with the team's `.p8` key. Apple takes one for an hour and refuses one
/// renewed more often than every 20 minutes (`TooManyProviderTokenUpdates`), so a token is used
/// for 50 minutes, and renewed earlier only when Apple says it has expired — at most once in 20.
final class ProviderToken: Sendable {
    private struct Current {
        var token: String
        var issuedAt: Date
        var forcedAt: Date?
    }

    private let key: P256.Signing.PrivateKey
    private let keyID: String
    private let teamID: String
    private let now: @Sendable () -> Date
    private let current = Mutex<Current?>(nil)

    static let lifetime: TimeInterval = 50 * 60
    static let minimumRenewal: TimeInterval = 20 * 60

    /// - Parameter pem: the `.p8` file's text (a PKCS #8 P-256 key).
    /// - Throws: when `pem` is no P-256 private key.
    init(pem: String, keyID: String, teamID: String, now: @escaping @Sendable () -> Date = Date.init) throws {
        self.key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        self.keyID = keyID
        self.teamID = teamID
        self.now = now
    }

    /// The token to send now: the current one while it is younger than 50 minutes.
    func token() throws -> String {
        let now = now()
        return try current.withLock { current in
            if let held = current, now.timeIntervalSince(held.issuedAt) < Self.lifetime { return held.token }
            let token = try sign(at: now)
            current = Current(token: token, issuedAt: now, forcedAt: current?.forcedAt)
            return token
        }
    }

    /// After Apple answered `ExpiredProviderToken` to `rejected`: a new token, unless one was
    /// already made since (another request saw the same answer) or one was forced less than 20
    /// minutes ago (then the current one is kept, and the notification waits as on a 5xx).
    /// - Returns: the token to retry with, or `nil` when none may be made yet.
    func renew(rejected: String) throws -> String? {
        let now = now()
        return try current.withLock { current in
            if let held = current, held.token != rejected { return held.token }
            if let forced = current?.forcedAt, now.timeIntervalSince(forced) < Self.minimumRenewal { return nil }
            let token = try sign(at: now)
            current = Current(token: token, issuedAt: now, forcedAt: now)
            return token
        }
    }

    private func sign(at time: Date) throws -> String {
        let header = Base64URL.encode(Data(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Base64URL.encode(Data(#"{"iss":"\#(teamID)","iat":\#(Int(time.timeIntervalSince1970))}"#.utf8))
        let input = header + "." + claims
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
