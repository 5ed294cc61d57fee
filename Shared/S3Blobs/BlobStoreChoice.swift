import AsyncHTTPClient
import Blobs
import Foundation
import Logging
import ServiceKit

/// Which blob store a service uses: `BLOB_STORE=file` (the default: a folder, `<PREFIX>_BLOB_DIR`)
/// or `BLOB_STORE=s3` (a bucket, `S3_*`), so that replicas on several hosts share one store.
package enum BlobStoreChoice: Sendable {
    case file(URL)
    case s3(S3Settings)

    package enum Kind: String, CaseIterable, Sendable { case file, s3 }

    /// - Parameter folder: the file store's root, from the service's own settings.
    package init(from reader: ConfigurationReader, folder: URL) throws(ConfigurationError) {
        switch try reader.choice("BLOB_STORE", default: Kind.file) {
        case .file: self = .file(folder)
        case .s3: self = .s3(try S3Settings(from: reader))
        }
    }

    /// The store, and for S3 the HTTP client it uses (the caller shuts it down when it stops).
    package func make(logger: Logger) throws -> (store: any BlobStore, http: HTTPClient?) {
        switch self {
        case .file(let root):
            return (try FileBlobStore(root: root), nil)
        case .s3(let settings):
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: S3BlobStore.httpConfiguration)
            return (S3BlobStore(settings: settings, http: http, logger: logger), http)
        }
    }

    /// `links`, made to presign S3 GETs when the store is S3 with `S3_PRESIGN=true`; as they are
    /// otherwise. A presigned link's signing time is the hour before its expiry's lifetime began,
    /// so the same expiry always gives the same URL (and answers holding it keep their ETag).
    package func mediaLinks(_ links: MediaLinks, store: any BlobStore) -> MediaLinks {
        guard case .s3(let settings) = self, settings.presign, let s3 = store as? S3BlobStore else { return links }
        var presigning = links
        let lifetime = Int(links.lifetime.components.seconds)
        presigning.presigner = { blob, expires in
            let signedAt = ((expires - lifetime) / 3_600 - 1) * 3_600
            return s3.client.presignedGet(blob.path, date: Date(timeIntervalSince1970: TimeInterval(signedAt)), expiresIn: expires - signedAt)
        }
        return presigning
    }

    /// Presigned reads of kept blobs when the store is S3 with `S3_PRESIGN=true` (image variants,
    /// after Splash rendered them); nil otherwise.
    package func presignedReads(store: any BlobStore) -> PresignedReads? {
        guard case .s3(let settings) = self, settings.presign, let s3 = store as? S3BlobStore else { return nil }
        return PresignedReads(client: s3.client)
    }

    /// Where blobs are, for the service's start-up log line.
    package var description: String {
        switch self {
        case .file(let root): root.path
        case .s3(let settings): "s3 \(settings.endpoint.absoluteString) bucket \(settings.bucket)"
        }
    }
}

/// Presigned GETs straight to the bucket for blobs Splash has checked are there. A link is signed
/// at the start of the hour for two hours: the same blob gives the same URL for the hour (a
/// client's cache holds it), and a URL works for at least an hour after it is given.
package struct PresignedReads: Sendable {
    let client: S3Client

    /// The link to `key`, answered with `contentType` and `cacheControl`, and how many more
    /// seconds it works from `now`.
    package func link(
        _ key: BlobKey,
        contentType: String,
        cacheControl: String,
        now: Date = Date()
    ) -> (url: String, worksFor: Int) {
        let signedAt = Int(now.timeIntervalSince1970) / 3_600 * 3_600
        let url = client.presignedGet(
            key.path,
            date: Date(timeIntervalSince1970: TimeInterval(signedAt)),
            expiresIn: 7_200,
            contentType: contentType,
            cacheControl: cacheControl
        )
        return (url, signedAt + 7_200 - Int(now.timeIntervalSince1970))
    }
}
