import Blobs
import Contracts
import Foundation
import KeySetClient
import S3Blobs
import ServiceAssembly
import ServiceKit

/// Everything `social` reads from its environment; each variable is described in
/// Services/Social/README.md, under "Configuration".
struct SocialConfiguration: ServiceConfiguration {
    /// Its HTTP server, database and event bus.
    var standard: StandardSettings
    var http: HTTPServerSettings { standard.http }
    /// Where auth publishes its verification keys, and the issuer its tokens carry.
    var keys: KeySetSettings
    /// Where media and storage links point; the blob store's root (the same store edit-render
    /// writes its rendered edits to); the key that signs storage links and links to rendered
    /// edits (edit-render's `RENDER_MEDIA_KEY`); how long a link in a feed, a post or a list
    /// works, before bucketing.
    var media: MediaSettings
    /// `BLOB_STORE`: the folder of `media` (the default) or an S3 bucket.
    var blobStore: BlobStoreChoice
    /// Signed links' expiry is rounded up to a multiple of this, so the same object signed twice
    /// in one bucket gives the same link (and caches hit).
    var signedURLBucket: Duration
    /// A posts object not attached to a post this long after its upload is deleted.
    var orphanTTL: Duration
    /// How often the collector looks for orphans and unfinished blob writes.
    var collectorInterval: Duration
    var maxUploadBytes: Int
    var photoCatalogURL: URL
    var catalogServiceToken: String?
    /// `STORAGE_RENDER_AVIF`: image transformations answer AVIF to a client that accepts it and
    /// asks no format (off by default: AVIF takes several times WebP's time to encode).
    var rendersAVIF: Bool
    /// Images re-encoded at once (one libvips thread each).
    var imageWorkers: Int
    /// The consumer group the projections read `auth.users` and `render.results` in (every
    /// replica of one deployment shares it).
    var projectionGroup: String

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        standard = try StandardSettings(from: reader, defaultPort: 8084)
        keys = try KeySetSettings(from: reader, prefix: "SOCIAL")
        media = try MediaSettings(from: reader, prefix: "SOCIAL", shortestLifetime: .seconds(60))
        blobStore = try BlobStoreChoice(from: reader, folder: media.blobDirectory)
        signedURLBucket = try reader.duration("SOCIAL_SIGNED_URL_BUCKET", default: .seconds(300), minimum: .seconds(1))
        orphanTTL = try reader.duration("SOCIAL_ORPHAN_TTL", default: .seconds(86_400), minimum: .seconds(1))
        collectorInterval = try reader.duration("SOCIAL_COLLECTOR_INTERVAL", default: .seconds(60), minimum: .milliseconds(100))
        maxUploadBytes = try reader.byteCount("SOCIAL_MAX_UPLOAD", default: 25 << 20, in: 1_024...(100 << 20))
        photoCatalogURL = try reader.url("SOCIAL_PHOTO_CATALOG_URL", schemes: ["http", "https"], default: URL(string: "http://127.0.0.1:8082")!)
        catalogServiceToken = try reader.optionalSecret("CATALOG_SERVICE_TOKEN", expected: "photo-catalog's service token")
        rendersAVIF = try reader.bool("STORAGE_RENDER_AVIF", default: false)
        imageWorkers = try reader.integer("SOCIAL_IMAGE_WORKERS", default: ProcessInfo.processInfo.activeProcessorCount, in: 1...64)
        projectionGroup = try reader.string("SOCIAL_PROJECTION_GROUP", default: ConsumerGroupCatalog.socialProjections.name)
    }
}
