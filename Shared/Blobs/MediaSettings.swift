import Foundation
import ServiceKit

/// What a service that stores blobs and signs links to them reads: `<PREFIX>_PUBLIC_URL` (where
/// links point), `<PREFIX>_BLOB_DIR` (the file store's root, under `SPLASH_DATA_DIR` by default),
/// `RENDER_MEDIA_KEY` (the one key every media link is signed with, shared by the services that
/// sign or read them) and `<PREFIX>_MEDIA_URL_TTL` (how long a link works).
package struct MediaSettings: Sendable {
    package var publicBase: String
    package var blobDirectory: URL
    package var key: [UInt8]
    package var linkLifetime: Duration

    package init(from reader: ConfigurationReader, prefix: String, shortestLifetime: Duration) throws(ConfigurationError) {
        publicBase = try reader.publicBase("\(prefix)_PUBLIC_URL")
        let dataDirectory = reader.raw("SPLASH_DATA_DIR") ?? ".data"
        blobDirectory = URL(fileURLWithPath: try reader.string("\(prefix)_BLOB_DIR", default: dataDirectory + "/blobs"))
        guard let key = try reader.optionalSecret("RENDER_MEDIA_KEY", expected: "a secret of at least 32 characters"), key.utf8.count >= 32 else {
            throw ConfigurationError(
                variable: "RENDER_MEDIA_KEY",
                expected: "a secret of at least 32 characters (or RENDER_MEDIA_KEY_FILE)",
                problem: .missing
            )
        }
        self.key = Array(key.utf8)
        linkLifetime = try reader.duration("\(prefix)_MEDIA_URL_TTL", default: .seconds(900), minimum: shortestLifetime)
    }

    /// Signs links with this key, lifetime and base.
    package var links: MediaLinks {
        MediaLinks(secret: key, lifetime: linkLifetime, publicBase: publicBase)
    }
}
