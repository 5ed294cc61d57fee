import Foundation
import ServiceKit

/// Where an S3-protocol store is and how to reach it: `S3_ENDPOINT`, `S3_REGION`, `S3_BUCKET`,
/// `S3_ACCESS_KEY_ID`, `S3_SECRET_ACCESS_KEY` (or `S3_SECRET_ACCESS_KEY_FILE`), `S3_ADDRESSING`,
/// `S3_MULTIPART_THRESHOLD`.
package struct S3Settings: Sendable {
    package enum Addressing: String, Sendable, CaseIterable {
        /// `https://endpoint/bucket/key`: MinIO, moto and most S3-protocol servers.
        case path
        /// `https://bucket.endpoint/key`: AWS's preferred form.
        case virtual
    }

    package var endpoint: URL
    package var region: String
    package var bucket: String
    package var accessKeyID: String
    package var secretAccessKey: String
    package var addressing: Addressing
    /// Objects larger than this are uploaded in parts of this size (at least 5 MiB, S3's minimum).
    package var multipartThreshold: Int
    /// How long one request may take before it is abandoned (and retried, when it may be).
    package var requestTimeout: Duration
    /// How many times a request that failed for the server's sake (5xx, throttling, a dropped
    /// connection) is sent in all.
    package var attempts: Int
    /// `S3_PRESIGN`: media links are presigned S3 GETs (clients fetch from the bucket) instead of
    /// Splash's own signed links served by edit-render.
    package var presign: Bool = false
    /// `S3_PUBLIC_ENDPOINT`: where clients reach the bucket, for presigned links (the endpoint by default).
    package var publicEndpoint: URL?

    package init(
        endpoint: URL,
        region: String,
        bucket: String,
        accessKeyID: String,
        secretAccessKey: String,
        addressing: Addressing = .path,
        multipartThreshold: Int = 16 << 20,
        requestTimeout: Duration = .seconds(60),
        attempts: Int = 4
    ) {
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.addressing = addressing
        self.multipartThreshold = max(multipartThreshold, 5 << 20)
        self.requestTimeout = requestTimeout
        self.attempts = attempts
    }

    package init(from reader: ConfigurationReader) throws(ConfigurationError) {
        let endpoint = try reader.url("S3_ENDPOINT", schemes: ["http", "https"])
        let region = try reader.string("S3_REGION", default: "us-east-1")
        let bucket = try reader.string("S3_BUCKET")
        let accessKeyID = try reader.string("S3_ACCESS_KEY_ID")
        guard let secret = try reader.optionalSecret("S3_SECRET_ACCESS_KEY", expected: "the S3 secret access key") else {
            throw ConfigurationError(
                variable: "S3_SECRET_ACCESS_KEY",
                expected: "the S3 secret access key (or S3_SECRET_ACCESS_KEY_FILE)",
                problem: .missing
            )
        }
        self.init(
            endpoint: endpoint,
            region: region,
            bucket: bucket,
            accessKeyID: accessKeyID,
            secretAccessKey: secret,
            addressing: try reader.choice("S3_ADDRESSING", default: .path),
            multipartThreshold: try reader.byteCount("S3_MULTIPART_THRESHOLD", default: 16 << 20, in: (5 << 20)...(5 << 30))
        )
        presign = try reader.bool("S3_PRESIGN", default: false)
        if reader.raw("S3_PUBLIC_ENDPOINT") != nil { publicEndpoint = try reader.url("S3_PUBLIC_ENDPOINT", schemes: ["http", "https"]) }
    }
}
