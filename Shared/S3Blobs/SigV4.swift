import Crypto
import Foundation
import ServiceKit

/// AWS Signature Version 4 for S3 requests: the canonical request, the string to sign, the
/// signing key derived per day, region and service, and the `Authorization` header.
/// (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html)
package struct SigV4: Sendable {
    package let accessKeyID: String
    package let secretAccessKey: String
    package let region: String
    package let service: String

    package init(accessKeyID: String, secretAccessKey: String, region: String, service: String = "s3") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.region = region
        self.service = service
    }

    /// The hash of an empty body, and what `x-amz-content-sha256` says of a body not hashed.
    package static let emptyPayload = SHA256.hash(data: [UInt8]()).hexEncoded
    package static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// `20130524T000000Z`.
    package static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let fields = [parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second].map { $0 ?? 0 }
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", fields[0], fields[1], fields[2], fields[3], fields[4], fields[5])
    }

    /// The `Authorization` header for a request.
    /// - Parameters:
    ///   - path: the request's path, each segment already percent-encoded (`canonicalPath`).
    ///   - query: the query's decoded name-value pairs.
    ///   - headers: every header to sign (`host` and `x-amz-date` among them), names in any case.
    ///   - payloadHash: the body's SHA-256 in hex, or `unsignedPayload`.
    package func authorization(
        method: String,
        path: String,
        query: [(String, String)],
        headers: [(String, String)],
        payloadHash: String,
        timestamp: String
    ) -> String {
        let (canonical, signedHeaders) = canonicalRequest(method: method, path: path, query: query, headers: headers, payloadHash: payloadHash)
        let scope = "\(timestamp.prefix(8))/\(region)/\(service)/aws4_request"
        let signature = sign(stringToSign(canonical, timestamp: timestamp, scope: scope), day: String(timestamp.prefix(8)))
        return "AWS4-HMAC-SHA256 Credential=\(accessKeyID)/\(scope),SignedHeaders=\(signedHeaders),Signature=\(signature)"
    }

    /// The query of a presigned request (SigV4 in the query string): `X-Amz-Algorithm`,
    /// `-Credential`, `-Date`, `-Expires`, `-SignedHeaders` (`host` alone) and `-Signature`, for a
    /// request anyone holding the URL may make until `timestamp` + `expiresIn` seconds; signed
    /// `parameters` come first (S3's `response-content-type` and such).
    package func presignedQuery(
        method: String,
        path: String,
        host: String,
        timestamp: String,
        expiresIn: Int,
        parameters: [(String, String)] = []
    ) -> String {
        let scope = "\(timestamp.prefix(8))/\(region)/\(service)/aws4_request"
        let query =
            parameters + [
                ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", "\(accessKeyID)/\(scope)"), ("X-Amz-Date", timestamp),
                ("X-Amz-Expires", String(expiresIn)), ("X-Amz-SignedHeaders", "host"),
            ]
        let (canonical, _) = canonicalRequest(method: method, path: path, query: query, headers: [("host", host)], payloadHash: Self.unsignedPayload)
        let signature = sign(stringToSign(canonical, timestamp: timestamp, scope: scope), day: String(timestamp.prefix(8)))
        return (query + [("X-Amz-Signature", signature)]).map { "\($0.0)=\(Self.encode($0.1))" }.joined(separator: "&")
    }

    /// The canonical request and its signed-headers list.
    package func canonicalRequest(
        method: String,
        path: String,
        query: [(String, String)],
        headers: [(String, String)],
        payloadHash: String
    ) -> (String, String) {
        let encoded: [(name: String, value: String)] = query.map { (Self.encode($0.0), Self.encode($0.1)) }
        let sorted = encoded.sorted { (left, right) -> Bool in left.name == right.name ? left.value < right.value : left.name < right.name }
        let canonicalQuery = sorted.map { (pair) -> String in pair.name + "=" + pair.value }.joined(separator: "&")
        // Names lower-cased, values trimmed with inner runs of spaces folded; a repeated name's
        // values joined with commas in their order.
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            let folded = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            merged[name.lowercased(), default: []].append(folded)
        }
        let names = merged.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let canonical = [method, path.isEmpty ? "/" : path, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].joined(separator: "\n")
        return (canonical, signedHeaders)
    }

    package func stringToSign(_ canonicalRequest: String, timestamp: String, scope: String) -> String {
        ["AWS4-HMAC-SHA256", timestamp, scope, SHA256.hash(data: Array(canonicalRequest.utf8)).hexEncoded].joined(separator: "\n")
    }

    /// The signature of `stringToSign` with the key for `day` (`yyyymmdd`).
    package func sign(_ stringToSign: String, day: String) -> String {
        let signature = HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: signingKey(day: day))
        return signature.hexEncoded
    }

    package func signingKey(day: String) -> SymmetricKey {
        func hmac(_ key: SymmetricKey, _ text: String) -> SymmetricKey {
            SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: key)))
        }
        let dated = hmac(SymmetricKey(data: Array("AWS4\(secretAccessKey)".utf8)), day)
        return hmac(hmac(hmac(dated, region), service), "aws4_request")
    }

    /// RFC 3986 percent-encoding as SigV4 wants it: everything but `A-Z a-z 0-9 - _ . ~` (and `/`
    /// when `keepSlash`) as `%XX` in upper case.
    package static func encode(_ text: String, keepSlash: Bool = false) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepSlash:
                out.unicodeScalars.append("/")
            default:
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(digits[Int(byte >> 4)])
                out.unicodeScalars.append(digits[Int(byte & 0xF)])
            }
        }
        return out
    }
}
