import Hummingbird
import NIOCore

/// Limits that apply to the routes under one path prefix: how large a request body may be and how
/// long a handler may take (`nil`: no limit, for long-lived streams such as SSE and WebSockets).
///
/// The policy with the longest matching prefix wins; routes no policy covers get the service's
/// defaults (`HTTP_MAX_BODY_SIZE`, `HTTP_REQUEST_TIMEOUT`).
package struct RoutePolicy: Sendable, Equatable {
    package var pathPrefix: String
    package var maxBodySize: Int
    package var timeout: Duration?

    package init(pathPrefix: String, maxBodySize: Int, timeout: Duration?) {
        self.pathPrefix = pathPrefix
        self.maxBodySize = maxBodySize
        self.timeout = timeout
    }

    /// Whether `path` lies under this policy's prefix, on a segment boundary.
    func covers(_ path: String) -> Bool {
        guard path.hasPrefix(pathPrefix) else { return false }
        if pathPrefix.hasSuffix("/") || path.utf8.count == pathPrefix.utf8.count { return true }
        return path.utf8.dropFirst(pathPrefix.utf8.count).first == UInt8(ascii: "/")
    }
}

/// Picks the policy for a request path.
package struct RoutePolicies: Sendable {
    private let policies: [RoutePolicy]
    private let fallback: RoutePolicy

    package init(default settings: HTTPServerSettings, overrides: [RoutePolicy] = []) {
        self.fallback = RoutePolicy(pathPrefix: "/", maxBodySize: settings.maxBodySize, timeout: settings.requestTimeout)
        self.policies = overrides.sorted { $0.pathPrefix.utf8.count > $1.pathPrefix.utf8.count }
    }

    package func policy(for path: String) -> RoutePolicy {
        policies.first { $0.covers(path) } ?? fallback
    }
}

extension Problem {
    /// 503: the handler ran past the route's timeout.
    package static func requestTimedOut(after timeout: Duration) -> Problem {
        Problem(
            status: .serviceUnavailable,
            type: "request-timeout",
            title: "Request timed out",
            detail: "The request took longer than \(DurationFormat.format(timeout)) and was abandoned."
        )
    }

    /// 413: the request body is larger than the route allows.
    package static func bodyTooLarge(limit: Int) -> Problem {
        Problem(
            status: .contentTooLarge,
            type: "body-too-large",
            title: "Request body too large",
            detail: "The request body exceeds the \(limit)-byte limit of this route."
        )
    }
}

/// A request body that fails with 413 once more than `limit` bytes have arrived.
struct SizeLimitedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: RequestBody
    let limit: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let limit: Int
        var received = 0

        mutating func next() async throws -> ByteBuffer? {
            guard let chunk = try await base.next() else { return nil }
            received += chunk.readableBytes
            if received > limit {
                throw Problem.bodyTooLarge(limit: limit)
            }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), limit: limit)
    }
}
