import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit

/// What an S3-protocol server refused, with its own code and message
/// (`403 SignatureDoesNotMatch: The request signature we calculated does not match …`).
package struct S3Error: Error, CustomStringConvertible, Equatable {
    package var status: Int
    package var code: String
    package var message: String
    package var operation: String

    package var description: String {
        "S3 \(operation) failed: \(status) \(code)\(message.isEmpty ? "" : ": \(message)")"
    }
}

/// The requests of the S3 protocol that the blob store makes, signed with SigV4, each sent again
/// with backoff when the server was at fault (5xx, `SlowDown`, a dropped connection) and bounded
/// by a timeout. Bodies are in memory (a part at most), so every request can be sent again.
package struct S3Client: Sendable {
    package let settings: S3Settings
    let http: HTTPClient
    let signer: SigV4
    let logger: Logger

    package init(settings: S3Settings, http: HTTPClient, logger: Logger) {
        self.settings = settings
        self.http = http
        self.signer = SigV4(accessKeyID: settings.accessKeyID, secretAccessKey: settings.secretAccessKey, region: settings.region)
        self.logger = logger
    }

    package struct Answer: Sendable {
        package var status: Int
        package var headers: HTTPHeaders
        package var body: ByteBuffer
    }

    /// Sends one request to the bucket (`key` nil: the bucket itself) and collects its answer.
    /// - Throws: `S3Error` for an answer outside `accepting`, after the retries a server fault gets.
    package func send(
        _ method: HTTPMethod,
        key: String?,
        query: [(String, String)] = [],
        headers: [(String, String)] = [],
        body: ByteBuffer? = nil,
        accepting: Set<Int> = [200],
        operation: String,
        maxAnswer: Int = 1 << 20
    ) async throws -> Answer {
        try await retrying(operation) {
            let response = try await execute(method, key: key, query: query, headers: headers, body: body)
            let answer = Answer(status: Int(response.status.code), headers: response.headers, body: try await response.body.collect(upTo: maxAnswer))
            return accepting.contains(answer.status) ? .done(answer) : .refused(answer)
        }
    }

    /// Sends a request whose answer's body is read as it arrives: retried like `send` until an
    /// answer begins; `nil` for a 404.
    package func stream(_ method: HTTPMethod, key: String, operation: String) async throws -> HTTPClientResponse? {
        try await retrying(operation) {
            let response = try await execute(method, key: key, query: [], headers: [], body: nil)
            switch response.status.code {
            case 200: return .done(response)
            case 404: return .done(nil)
            default:
                return .refused(
                    Answer(status: Int(response.status.code), headers: response.headers, body: try await response.body.collect(upTo: 1 << 20))
                )
            }
        }
    }

    /// What one attempt came to: a result, or the server's refusal (sent again when the server
    /// was at fault).
    private enum Attempt<Result> {
        case done(Result)
        case refused(Answer)
    }

    /// Makes `attempt` until it is done, at most `settings.attempts` times: again after a server
    /// fault (5xx, throttling) or a failed connection, with backoff.
    private func retrying<Result>(_ operation: String, _ attempt: () async throws -> Attempt<Result>) async throws -> Result {
        var made = 0
        while true {
            made += 1
            do {
                switch try await attempt() {
                case .done(let result):
                    return result
                case .refused(let answer):
                    let error = Self.error(answer, operation: operation)
                    guard Self.isServerFault(answer.status, code: error.code), made < settings.attempts else { throw error }
                    logger.warning("S3 request failed; retrying", metadata: ["operation": "\(operation)", "error": "\(error)", "attempt": "\(made)"])
                }
            } catch let error as S3Error {
                throw error
            } catch {
                // The connection failed or timed out: the server may not have it, or may; every
                // request here is idempotent or harmless to repeat (a part, an abort).
                guard made < settings.attempts, !(error is CancellationError) else {
                    throw S3Error(status: 0, code: "Unreachable", message: String(describing: error), operation: operation)
                }
                logger.warning("S3 request failed; retrying", metadata: ["operation": "\(operation)", "error": "\(error)", "attempt": "\(made)"])
            }
            // 100 ms, 200 ms, 400 ms…, with up to half again at random so retrying clients spread out.
            let delay = 100 * (1 << min(made - 1, 6))
            try await Task.sleep(for: .milliseconds(delay + Int.random(in: 0...(delay / 2))))
        }
    }

    /// One request, signed, sent; its answer as it begins.
    private func execute(
        _ method: HTTPMethod,
        key: String?,
        query: [(String, String)],
        headers extra: [(String, String)],
        body: ByteBuffer?
    ) async throws -> HTTPClientResponse {
        let (url, host, path) = location(key: key, query: query)
        let timestamp = SigV4.timestamp(Date())
        let payloadHash = body.map { SHA256.hash(data: $0.readableBytesView).hexEncoded } ?? SigV4.emptyPayload
        let signed = [("host", host), ("x-amz-date", timestamp), ("x-amz-content-sha256", payloadHash)] + extra
        let authorization = signer.authorization(
            method: method.rawValue,
            path: path,
            query: query,
            headers: signed,
            payloadHash: payloadHash,
            timestamp: timestamp
        )
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in signed where name != "host" { request.headers.add(name: name, value: value) }
        request.headers.add(name: "Authorization", value: authorization)
        if let body { request.body = .bytes(body) }
        return try await http.execute(request, timeout: .nanoseconds(settings.requestTimeout.totalNanoseconds))
    }

    /// A GET of `key` anyone may make from `date` for `expiresIn` seconds, at the public endpoint;
    /// `contentType` and `cacheControl`, when given, are the headers the bucket answers it with
    /// (`response-content-type`, `response-cache-control`) whatever the object was stored with.
    package func presignedGet(_ key: String, date: Date, expiresIn: Int, contentType: String? = nil, cacheControl: String? = nil) -> String {
        let (url, host, path) = location(key: key, query: [], endpoint: settings.publicEndpoint ?? settings.endpoint)
        let overrides = [("response-cache-control", cacheControl), ("response-content-type", contentType)].compactMap { name, value in
            value.map { (name, $0) }
        }
        return url + "?"
            + signer.presignedQuery(
                method: "GET",
                path: path,
                host: host,
                timestamp: SigV4.timestamp(date),
                expiresIn: expiresIn,
                parameters: overrides
            )
    }

    /// The URL, `Host` and canonical path of `key` (or of the bucket) in the configured addressing.
    func location(key: String?, query: [(String, String)], endpoint: URL? = nil) -> (url: String, host: String, path: String) {
        let endpoint = endpoint ?? settings.endpoint
        let scheme = endpoint.scheme ?? "https"
        var host = endpoint.host ?? ""
        if let port = endpoint.port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) { host += ":\(port)" }
        let encodedKey = key.map { SigV4.encode($0, keepSlash: true) }
        var path: String
        switch settings.addressing {
        case .path:
            path = "/" + SigV4.encode(settings.bucket) + (encodedKey.map { "/" + $0 } ?? "")
        case .virtual:
            host = settings.bucket + "." + host
            path = "/" + (encodedKey ?? "")
        }
        let base = endpoint.path.hasSuffix("/") ? String(endpoint.path.dropLast()) : endpoint.path
        path = base + path
        let queryString = query.map { "\(SigV4.encode($0.0))=\(SigV4.encode($0.1))" }.joined(separator: "&")
        return ("\(scheme)://\(host)\(path)\(queryString.isEmpty ? "" : "?" + queryString)", host, path)
    }

    /// The ids of the bucket's multipart uploads not completed or aborted (ListMultipartUploads).
    package func openMultipartUploads() async throws -> [String] {
        let answer = try await send(.GET, key: nil, query: [("uploads", "")], operation: "ListMultipartUploads")
        return XMLText.blocks("Upload", in: String(buffer: answer.body)).compactMap { XMLText.all("UploadId", in: $0).first }
    }

    static func isServerFault(_ status: Int, code: String) -> Bool {
        status >= 500 || status == 429 || code == "SlowDown" || code == "RequestTimeout" || code == "InternalError"
    }

    static func error(_ answer: Answer, operation: String) -> S3Error {
        let text = String(buffer: answer.body)
        return S3Error(
            status: answer.status,
            code: XMLText.first("Code", in: text) ?? "HTTP\(answer.status)",
            message: XMLText.first("Message", in: text) ?? "",
            operation: operation
        )
    }
}

/// The few values the blob store reads from S3's XML answers: an element's text by its name,
/// entities decoded. S3's answers are flat enough that no XML parser is needed.
enum XMLText {
    /// The text of every `<name>…</name>` in `xml`, in order.
    static func all(_ name: String, in xml: Substring) -> [String] {
        var values: [String] = []
        var rest = xml
        let open = "<\(name)>"
        let close = "</\(name)>"
        while let start = rest.range(of: open) {
            guard let end = rest.range(of: close, range: start.upperBound..<rest.endIndex) else { break }
            values.append(decode(rest[start.upperBound..<end.lowerBound]))
            rest = rest[end.upperBound...]
        }
        return values
    }

    static func first(_ name: String, in xml: String) -> String? {
        all(name, in: xml[...]).first
    }

    /// The blocks `<name>…</name>` (their insides), for lists of records.
    static func blocks(_ name: String, in xml: String) -> [Substring] {
        var blocks: [Substring] = []
        var rest = xml[...]
        let open = "<\(name)>"
        let close = "</\(name)>"
        while let start = rest.range(of: open), let end = rest.range(of: close, range: start.upperBound..<rest.endIndex) {
            blocks.append(rest[start.upperBound..<end.lowerBound])
            rest = rest[end.upperBound...]
        }
        return blocks
    }

    static func decode(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let number =
                    entity.hasPrefix("#x")
                    ? UInt32(entity.dropFirst(2), radix: 16) : entity.hasPrefix("#") ? UInt32(entity.dropFirst(), radix: 10) : nil
                if let number, let scalar = Unicode.Scalar(number) { out.unicodeScalars.append(scalar) } else { out += "&\(entity);" }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return out + rest
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
