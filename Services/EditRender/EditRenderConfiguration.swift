import Blobs
import Contracts
import Foundation
import KeySetClient
import S3Blobs
import ServiceAssembly
import ServiceKit

/// What an `edit-render` process runs: the HTTP API, the render workers, or both.
enum RenderRole: String, CaseIterable, Sendable {
    case api, worker, all

    var servesAPI: Bool { self != .worker }
    var runsWorkers: Bool { self != .api }
}

/// Everything `edit-render` reads from its environment; each variable is described in
/// Services/EditRender/README.md, under "Configuration".
struct EditRenderConfiguration: ServiceConfiguration {
    /// Its HTTP server, database and event bus.
    var standard: StandardSettings
    var http: HTTPServerSettings { standard.http }
    /// `RENDER_ROLE`; `--role` on the command line overrides it.
    var role: RenderRole
    /// Renders run in parallel up to this many (one libvips thread each).
    var workers: Int
    /// Where auth publishes its verification keys, and the issuer its tokens carry.
    var keys: KeySetSettings
    /// Where media URLs point, the blob store's root, the key that signs them and their lifetime.
    var media: MediaSettings
    /// `BLOB_STORE`: the folder of `media` (the default) or an S3 bucket.
    var blobStore: BlobStoreChoice
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
    /// The consumer group the API's replicas erase deleted users in.
    var erasureGroup: String

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        standard = try StandardSettings(from: reader, defaultPort: 8083)
        role = try reader.choice("RENDER_ROLE", default: .all)
        workers = try reader.integer("RENDER_WORKERS", default: ProcessInfo.processInfo.activeProcessorCount, in: 1...256)
        keys = try KeySetSettings(from: reader, prefix: "RENDER")
        media = try MediaSettings(from: reader, prefix: "RENDER", shortestLifetime: .seconds(1))
        blobStore = try BlobStoreChoice(from: reader, folder: media.blobDirectory)
        photoCatalogURL = try reader.url("RENDER_PHOTO_CATALOG_URL", schemes: ["http", "https"], default: URL(string: "http://127.0.0.1:8082")!)
        catalogServiceToken = try reader.optionalSecret("CATALOG_SERVICE_TOKEN", expected: "photo-catalog's service token")
        sourceHosts = Set(
            try reader.string("RENDER_SOURCE_HOSTS", default: "images.unsplash.com,plus.unsplash.com").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            }
        )
        allowsPrivateSources = try reader.bool("RENDER_ALLOW_PRIVATE_SOURCES", default: false)
        maxUploadBytes = try reader.byteCount("RENDER_MAX_UPLOAD", default: 25 << 20, in: 1_024...(100 << 20))
        workerGroup = try reader.string("RENDER_WORKER_GROUP", default: ConsumerGroupCatalog.renderWorkers.name)
        erasureGroup = try reader.string("RENDER_ERASURE_GROUP", default: ConsumerGroupCatalog.renderErasure.name)
    }
}
