import Contracts
import Foundation
import KeySetClient
import Mail
import ServiceAssembly
import ServiceKit

/// Everything `notify` reads from its environment; each variable is described in
/// Services/Notify/README.md, under "Configuration".
struct NotifyConfiguration: ServiceConfiguration {
    /// Its HTTP server, database and event bus.
    var standard: StandardSettings
    var http: HTTPServerSettings { standard.http }
    /// Where auth publishes its verification keys, and the issuer its tokens carry.
    var keys: KeySetSettings
    /// Apple's push service; `nil` without a key, when notifications go to the sink.
    var apns: APNsSettings?
    /// The consumer group notify reads the domain events in (every replica shares it).
    var consumerGroup: String
    /// An event older than this when it is consumed is logged as expired, not pushed.
    var maxEventAge: Duration
    /// The first retry's delay after APNs failed; each later one doubles, up to five minutes.
    var retryBackoff: Duration
    /// Notifications sent at once: HTTP/2 streams in flight on each APNs connection.
    var concurrency: Int
    /// How long the likes after a post's first are gathered into one push.
    var likeWindow: Duration
    /// Where receipts go: an SMTP server, or the catcher.
    var mail: MailSettings
    /// auth, asked for a receipt's address when it is sent.
    var authURL: URL
    /// What notify presents to auth's admin API; without it no receipt is sent.
    var authServiceToken: String?

    /// Where and as whom notify reaches APNs.
    struct APNsSettings: Sendable {
        var production: URL
        var sandbox: URL
        var caFile: String?
        /// The `.p8` key's text.
        var key: String
        var keyID: String
        var teamID: String
    }

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        standard = try StandardSettings(from: reader, defaultPort: 8086)
        keys = try KeySetSettings(from: reader, prefix: "NOTIFY")
        let production = try reader.url("NOTIFY_APNS_URL", schemes: ["https"], default: URL(string: "https://api.push.apple.com")!)
        let sandbox = try reader.url("NOTIFY_APNS_SANDBOX_URL", schemes: ["https"], default: URL(string: "https://api.sandbox.push.apple.com")!)
        let caFile = try reader.optionalValue("NOTIFY_APNS_CA_FILE", expected: "a readable PEM file of CA certificates") { path in
            FileManager.default.isReadableFile(atPath: path) ? path : nil
        }
        let key = try reader.optionalValue("NOTIFY_APNS_KEY_FILE", expected: "a readable .p8 file (the APNs key's PEM)", secret: true) { path in
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { $0.contains("PRIVATE KEY") ? $0 : nil }
        }
        let identifier = "10 letters or digits, as Apple shows it"
        let keyID = try reader.optionalValue("NOTIFY_APNS_KEY_ID", expected: identifier, parse: Self.appleIdentifier)
        let teamID = try reader.optionalValue("NOTIFY_APNS_TEAM_ID", expected: identifier, parse: Self.appleIdentifier)
        if let key {
            guard let keyID else { throw ConfigurationError(variable: "NOTIFY_APNS_KEY_ID", expected: identifier, problem: .missing) }
            guard let teamID else { throw ConfigurationError(variable: "NOTIFY_APNS_TEAM_ID", expected: identifier, problem: .missing) }
            apns = APNsSettings(production: production, sandbox: sandbox, caFile: caFile, key: key, keyID: keyID, teamID: teamID)
        } else {
            apns = nil
        }
        consumerGroup = try reader.string("NOTIFY_CONSUMER_GROUP", default: ConsumerGroupCatalog.notify.name)
        maxEventAge = try reader.duration("NOTIFY_MAX_EVENT_AGE", default: .seconds(600), minimum: .seconds(1))
        retryBackoff = try reader.duration("NOTIFY_RETRY_BACKOFF", default: .seconds(1), minimum: .milliseconds(10))
        concurrency = try reader.integer("NOTIFY_CONCURRENCY", default: 100, in: 1...1_000)
        likeWindow = try reader.duration("NOTIFY_LIKE_WINDOW", default: .seconds(600), minimum: .seconds(1))
        mail = try MailSettings(from: reader)
        authURL = try reader.url("NOTIFY_AUTH_URL", schemes: ["http", "https"], default: URL(string: "http://127.0.0.1:8081")!)
        authServiceToken = try reader.optionalSecret("AUTH_SERVICE_TOKEN", expected: "auth's service token")
    }

    private static func appleIdentifier(_ raw: String) -> String? {
        raw.utf8.count == 10 && raw.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } ? raw : nil
    }
}
