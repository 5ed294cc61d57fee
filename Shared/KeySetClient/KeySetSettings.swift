import AsyncHTTPClient
import Foundation
import Logging
import ServiceKit

/// Where a service finds auth's verification keys and the issuer its tokens must name:
/// `<PREFIX>_JWKS_URL` and `<PREFIX>_JWT_ISSUER`, with the local stack's defaults.
package struct KeySetSettings: Sendable {
    package var url: URL
    package var issuer: String

    package init(from reader: ConfigurationReader, prefix: String) throws(ConfigurationError) {
        url = try reader.url(
            "\(prefix)_JWKS_URL",
            schemes: ["http", "https"],
            default: URL(string: "http://127.0.0.1:8081/auth/v1/.well-known/jwks.json")!
        )
        issuer = try reader.string("\(prefix)_JWT_ISSUER", default: "http://localhost:8080/auth/v1")
    }
}

extension KeySetCache {
    /// The key set a service verifies its requests' tokens with, where `settings` say; a token
    /// with a key id it does not know makes it fetch again at most every 5 s.
    package convenience init(_ settings: KeySetSettings, client: HTTPClient, logger: Logger) {
        self.init(url: settings.url, issuer: settings.issuer, refreshInterval: .seconds(5), client: client, logger: logger)
    }
}
