import Database
import EventBus
import Foundation
import ServiceKit

/// What an `edit-render` process runs: the HTTP API, the render workers, or both.
enum RenderRole: String, CaseIterable, Sendable {
    case api, worker, all

    var servesAPI: Bool { self != .worker }
    var runsWorkers: Bool { self != .api }
}

/// Everything `edit-render` reads from its environment; each variable is described in
/// Services/EditRender/README.md, under "Configuration".
struct RenderConfiguration: ServiceConfiguration {
    var http: HTTPServerSettings
    var database: DatabaseSettings
    var events: EventBusSettings
    /// `RENDER_ROLE`; `--role` on the command line overrides it.
    var role: RenderRole
    /// Renders run in parallel up to this many (one libvips thread each).
    var workers: Int
    /// Where auth publishes its verification keys, and the issuer its tokens carry.
    var keySetURL: URL
    var issuer: String
    /// Where the apps reach Splash (the gateway): media URLs point there.
    var publicBase: String
    /// The local blob store's root directory.
    var blobDirectory: URL
    /// Signs media URLs; at least 32 bytes.
    var mediaKey: [UInt8]
    var mediaURLLifetime: Duration
    /// photo-catalog, for Unsplash sources and their download tracking.
    var photoCatalogURL: URL
    var catalogServiceToken: String?
    /// Hosts Unsplash sources may be fetched from.
    var sourceHosts: Set<String>
    /// Loopback and private addresses are refused as source hosts unless this is set (development).
    var allowsPrivateSources: Bool
    var maxUploadBytes: Int
    /// The consumer group render workers share; another group reads every job again.
    var workerGroup: String

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        http = try HTTPServerSettings(from: reader, defaultPort: 8083)
        database = try DatabaseSettings(from: reader)
        events = try EventBusSettings(from: reader)
        role = try reader.choice("RENDER_ROLE", default: .all)
        workers = try reader.integer("RENDER_WORKERS", default: ProcessInfo.processInfo.activeProcessorCount, in: 1...256)
        keySetURL = try reader.url("RENDER_JWKS_URL", schemes: ["http", "https"], default: URL(string: "http://127.0.0.1:8081/auth/v1/.well-known/jwks.json")!)
        issuer = try reader.string("RENDER_JWT_ISSUER", default: "http://localhost:8080/auth/v1")
        var publicBase = try reader.url("RENDER_PUBLIC_URL", schemes: ["http", "https"], default: URL(string: "http://localhost:8080")!).absoluteString
        while publicBase.hasSuffix("/") { publicBase.removeLast() }
        self.publicBase = publicBase
        let dataDirectory = reader.raw("SPLASH_DATA_DIR") ?? ".data"
        blobDirectory = URL(fileURLWithPath: try reader.string("RENDER_BLOB_DIR", default: dataDirectory + "/blobs"))
        guard let key = try reader.optionalSecret("RENDER_MEDIA_KEY", expected: "a secret of at least 32 characters"), key.utf8.count >= 32 else {
            throw ConfigurationError(variable: "RENDER_MEDIA_KEY", expected: "a secret of at least 32 characters (or RENDER_MEDIA_KEY_FILE)", problem: .missing)
        }
        mediaKey = Array(key.utf8)
        mediaURLLifetime = try reader.duration("RENDER_MEDIA_URL_TTL", default: .seconds(900), minimum: .seconds(1))
        photoCatalogURL = try reader.url("RENDER_PHOTO_CATALOG_URL", schemes: ["http", "https"], default: URL(string: "http://127.0.0.1:8082")!)
        catalogServiceToken = try reader.optionalSecret("CATALOG_SERVICE_TOKEN", expected: "photo-catalog's service token")
        sourceHosts = Set(try reader.string("RENDER_SOURCE_HOSTS", default: "images.unsplash.com,plus.unsplash.com").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        allowsPrivateSources = try reader.bool("RENDER_ALLOW_PRIVATE_SOURCES", default: false)
        maxUploadBytes = try reader.byteCount("RENDER_MAX_UPLOAD", default: 25 << 20, in: 1_024...(100 << 20))
        workerGroup = try reader.string("RENDER_WORKER_GROUP", default: "edit-render-workers")
    }
}
