import Contracts
import Foundation
import Identity
import Mail
import ServiceAssembly
import ServiceKit

/// Everything `auth` reads from its environment; each variable is described in
/// Services/Auth/README.md, under "Configuration".
struct AuthConfiguration: ServiceConfiguration {
    /// Its HTTP server, database and event bus.
    var standard: StandardSettings
    var http: HTTPServerSettings { standard.http }
    /// Signs new tokens: the first key configured.
    var signingKey: SigningKey
    /// Verifies tokens: the signing key and, during a rotation, the previous one.
    var verificationKeys: [VerificationKey]
    var issuer: String
    var accessTokenLifetime: Duration
    var refreshTokenReuseInterval: Duration
    var sessionInactivityTimeout: Duration
    var bcryptCost: Int
    var passwordPolicy: PasswordPolicy
    var tokenRateLimit: RateLimit
    var signUpRateLimit: RateLimit
    var failedSignInLimit: RateLimit
    var trustedProxies: [IPRange]
    /// Lets other Splash services create accounts (`POST /admin/users`) without an admin's token.
    var serviceToken: ServiceToken?
    /// Where auth's mail goes (`SMTP_URL`, `SMTP_FROM`, `SMTP_CA_FILE`; without a URL, the catcher).
    var mail: MailSettings
    /// The gateway's public address: mailed links start with it.
    var publicURL: String
    /// Where a link leads when its `redirect_to` is missing or not allowed.
    var redirects: RedirectPolicy
    /// How long a mailed code or link is good for.
    var otpLifetime: Duration
    /// A folder of Mustache templates overriding the built-in mails, file by file.
    var mailTemplatesDirectory: String?
    /// Sign-up mails a code to confirm the address, and password sign-in waits for it.
    var emailConfirm: Bool
    /// A changed address is confirmed from the current address as well as the new one.
    var secureEmailChange: Bool
    /// A session older than a day changes the password only with a reauthentication nonce.
    var securePasswordChange: Bool
    /// Sign in with Apple: its keys, issuer and the apps' bundle ids.
    var apple: AppleSettings
    /// The consumer group auth reads `tracking.restaurants` in (who owns restaurants).
    var consumerGroup: String

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        standard = try StandardSettings(from: reader, defaultPort: 8081)
        guard let signingKey = try Self.key(reader, "AUTH_JWT_KEY") else {
            throw ConfigurationError(
                variable: "AUTH_JWT_KEY",
                expected: "an EC P-256 private key in PEM (or AUTH_JWT_KEY_FILE naming one)",
                problem: .missing
            )
        }
        self.signingKey = signingKey
        verificationKeys = [signingKey.verificationKey]
        if let previous = try Self.key(reader, "AUTH_JWT_PREVIOUS_KEY") {
            verificationKeys.append(previous.verificationKey)
        }
        issuer = try reader.string("AUTH_JWT_ISSUER", default: "http://localhost:8080/auth/v1")
        accessTokenLifetime = try reader.duration("AUTH_ACCESS_TOKEN_TTL", default: .seconds(3_600), minimum: .seconds(30))
        refreshTokenReuseInterval = try reader.duration("AUTH_REFRESH_REUSE_INTERVAL", default: .seconds(10))
        sessionInactivityTimeout = try reader.duration("AUTH_SESSION_INACTIVITY_TIMEOUT", default: .seconds(30 * 86_400), minimum: .seconds(60))
        bcryptCost = try reader.integer("AUTH_BCRYPT_COST", default: 12, in: 4...31)
        passwordPolicy = PasswordPolicy(
            minimumLength: try reader.integer("AUTH_PASSWORD_MIN_LENGTH", default: 8, in: 6...72),
            requiredCharacters: try reader.choice("AUTH_PASSWORD_REQUIRED_CHARACTERS", default: PasswordPolicy.RequiredCharacters.none)
        )
        tokenRateLimit = try reader.rateLimit("AUTH_RATE_LIMIT_TOKEN", default: RateLimit(count: 30, window: .seconds(300)))
        signUpRateLimit = try reader.rateLimit("AUTH_RATE_LIMIT_SIGNUP", default: RateLimit(count: 30, window: .seconds(300)))
        failedSignInLimit = try reader.rateLimit("AUTH_RATE_LIMIT_FAILED_SIGN_INS", default: RateLimit(count: 10, window: .seconds(900)))
        trustedProxies = try reader.ipRanges("AUTH_TRUSTED_PROXIES")
        serviceToken = try ServiceToken.read("AUTH_SERVICE_TOKEN", from: reader)
        mail = try MailSettings(from: reader)
        publicURL = try Self.httpURL(reader, "AUTH_PUBLIC_URL", default: "http://localhost:8080")
        let siteURL = try Self.httpURL(reader, "AUTH_SITE_URL", default: "http://localhost:8080")
        redirects = RedirectPolicy(
            siteURL: siteURL,
            allowed: try reader.list("AUTH_REDIRECT_URLS", expected: "comma-separated URLs or globs (`*`, `**`)")
        )
        emailConfirm = try reader.bool("AUTH_EMAIL_CONFIRM", default: false)
        secureEmailChange = try reader.bool("AUTH_SECURE_EMAIL_CHANGE", default: true)
        securePasswordChange = try reader.bool("AUTH_SECURE_PASSWORD_CHANGE", default: false)
        apple = AppleSettings(
            keysURL: try reader.value(
                "AUTH_APPLE_JWKS_URL",
                expected: "an https:// URL (http:// only to a loopback address)",
                default: URL(string: "https://appleid.apple.com/auth/keys")!
            ) { raw in
                guard let url = URL(string: raw), url.host?.isEmpty == false else { return nil }
                return url.scheme == "https" || (url.scheme == "http" && url.pointsToLoopback) ? url : nil
            },
            issuer: try reader.string("AUTH_APPLE_ISSUER", default: "https://appleid.apple.com"),
            clientIDs: try reader.list("AUTH_APPLE_CLIENT_IDS", expected: "comma-separated bundle ids")
        )
        consumerGroup = try reader.string("AUTH_CONSUMER_GROUP", default: ConsumerGroupCatalog.auth.name)
        otpLifetime = try reader.duration("AUTH_OTP_TTL", default: .seconds(3_600), minimum: .seconds(60))
        mailTemplatesDirectory = try reader.optionalValue("AUTH_MAIL_TEMPLATES_DIR", expected: "a readable folder of .mustache files") { path in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue ? path : nil
        }
    }

    /// An `http://` or `https://` URL, without a trailing slash.
    private static func httpURL(_ reader: ConfigurationReader, _ name: String, default value: String) throws(ConfigurationError) -> String {
        try reader.value(name, expected: "an http:// or https:// URL", default: value) { raw in
            guard let url = URL(string: raw), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false else { return nil }
            return raw.hasSuffix("/") ? String(raw.dropLast()) : raw
        }
    }

    /// A PEM key from `<name>` (the PEM itself, newlines possibly written as `\n`) or `<name>_FILE`
    /// (a path to it).
    private static func key(_ reader: ConfigurationReader, _ name: String) throws(ConfigurationError) -> SigningKey? {
        let expected = "an EC P-256 private key in PEM"
        guard let pem = try reader.optionalSecret(name, expected: expected) else { return nil }
        guard let key = try? SigningKey(pem: pem.replacingOccurrences(of: "\\n", with: "\n")) else {
            throw ConfigurationError(variable: name, expected: expected, problem: .invalid(value: nil))
        }
        return key
    }

}
