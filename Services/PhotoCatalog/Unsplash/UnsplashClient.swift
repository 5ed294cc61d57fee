import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit

/// What Unsplash answered to one call.
struct UpstreamAnswer: Sendable {
    enum Outcome: Sendable, Equatable {
        /// 200: the body is the answer.
        case ok
        /// 404: no such photo (worth caching too).
        case notFound
        /// 429, or 403 with the plain-text body `Rate Limit Exceeded`.
        case rateLimited
        /// Anything else: a 5xx, a refused key, a request Unsplash rejected.
        case failed(status: Int)
    }

    var outcome: Outcome
    var status: Int
    var body: ByteBuffer
    /// `X-Total`.
    var total: Int?
    /// `X-Ratelimit-Limit` and `X-Ratelimit-Remaining`.
    var quota: Int?
    var remaining: Int?
}

/// Unsplash could not be asked at all.
struct UpstreamUnreachable: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}

/// Calls the Unsplash API with the application's key (in a header only: never in a URL, so it
/// cannot end up in a log line or a `Link` header), over a pooled client with a deadline per call.
final class UnsplashClient: Sendable {
    let baseURL: URL
    /// `baseURL` as text, ending in `/`: request paths are appended to it.
    private let base: String
    private let authorization: String
    private let timeout: Duration
    private let client: HTTPClient
    private let logger: Logger

    /// The largest answer accepted: a page of 30 full photos is about 100 KB.
    static let maxBodySize = 4 << 20

    init(settings: UnsplashSettings, client: HTTPClient, logger: Logger) {
        self.baseURL = settings.baseURL
        let base = settings.baseURL.absoluteString
        self.base = base.hasSuffix("/") ? base : base + "/"
        self.authorization = "Client-ID \(settings.accessKey)"
        self.timeout = settings.timeout
        self.client = client
        self.logger = logger
    }

    /// `GET <base>/<request path>?<parameters>`.
    func get(_ request: UnsplashRequest) async throws(UpstreamUnreachable) -> UpstreamAnswer {
        try await get(url: base + request.cacheKey, endpoint: request.path)
    }

    /// Whether `url` is on Unsplash's API host (a `download_location` must be, before the key goes
    /// anywhere near it).
    func isAPIURL(_ url: URL) -> Bool {
        url.scheme?.lowercased() == baseURL.scheme?.lowercased() && url.host?.lowercased() == baseURL.host?.lowercased()
            && url.port == baseURL.port
    }

    /// `GET url` on the API host (a photo's `download_location`, query string kept).
    func get(url: String, endpoint: String) async throws(UpstreamUnreachable) -> UpstreamAnswer {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: authorization)
        request.headers.add(name: "Accept-Version", value: "v1")
        request.headers.add(name: "Accept", value: "application/json")
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(timeout.totalNanoseconds))
            let body = try await response.body.collect(upTo: Self.maxBodySize)
            let status = Int(response.status.code)
            let answer = UpstreamAnswer(
                outcome: Self.outcome(status: status, body: body),
                status: status,
                body: body,
                total: response.headers.first(name: "X-Total").flatMap { Int($0) },
                quota: response.headers.first(name: "X-Ratelimit-Limit").flatMap { Int($0) },
                remaining: response.headers.first(name: "X-Ratelimit-Remaining").flatMap { Int($0) }
            )
            if case .failed = answer.outcome {
                logger.warning("Unsplash refused a call", metadata: ["endpoint": "\(endpoint)", "status": "\(status)"])
            }
            return answer
        } catch {
            // AsyncHTTPClient's errors name the host and the failure, never the request's headers.
            logger.warning("Unsplash could not be reached", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
            throw UpstreamUnreachable(reason: "\(error)")
        }
    }

    /// Rate limiting arrives as 429 or as a 403 whose body is the plain text "Rate Limit
    /// Exceeded"; an error body is never assumed to be JSON.
    static func outcome(status: Int, body: ByteBuffer) -> UpstreamAnswer.Outcome {
        switch status {
        case 200: return .ok
        case 404: return .notFound
        case 429: return .rateLimited
        case 403:
            let text = String(buffer: body).trimmingCharacters(in: .whitespacesAndNewlines)
            return text.lowercased().hasPrefix("rate limit exceeded") ? .rateLimited : .failed(status: status)
        default: return .failed(status: status)
        }
    }
}
