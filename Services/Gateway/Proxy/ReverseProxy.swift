import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import ServiceKit

/// Passes a request to its upstream service and the answer back, streaming both bodies: a large
/// upload or download never sits whole in the gateway's memory.
///
/// Calls go over the pooled keep-alive connections of `UpstreamPool`. An upstream that cannot be
/// reached gives 503 within the connect timeout; one that does not begin to answer in the route's
/// time gives 504; one that breaks the exchange gives 502. A request without a body and with an
/// idempotent method is tried again when the upstream never saw it: when no connection could be
/// made, or when a reused connection turned out to be closed.
struct ReverseProxy: Sendable {
    /// The pool of each route group's upstream, by group name.
    let pools: [String: UpstreamPool]
    let addresses: ClientAddressResolver
    /// Where `gateway_upstream_errors_total` is counted: the service's registry.
    let metrics: any MetricsFactory

    /// Answers with a `Content-Length` up to this size are read whole before they are passed on,
    /// which frees their connection at once; larger ones, and those of unknown length, stream.
    static let wholeAnswerLimit = 64 << 10

    func forward(_ request: Request, context: some ServiceRequestContext, to group: RouteGroup) async throws -> Response {
        guard let pool = pools[group.name] else { throw GatewayProblem.notConfigured(group.name) }
        let framing = BodyFraming(request.headers)
        let head = makeHead(request.head, framing: framing, peer: context.remoteAddress, requestID: context.requestID, pool: pool)
        let hasBody = framing.hasBody
        let retryable = !hasBody && [.get, .head, .options, .delete, .put].contains(request.method)
        let deadline = NIODeadline.now() + .nanoseconds(group.timeout.totalNanoseconds)
        var attempt = 1
        while true {
            do {
                return try await exchange(head, body: hasBody ? request.body : nil, on: pool, loop: context.channel.eventLoop, deadline: deadline)
            } catch {
                if retryable, attempt < 2, error.unseen {
                    attempt += 1
                    continue
                }
                throw failed(error.underlying, group: group, logger: context.logger)
            }
        }
    }

    /// Counts and logs a call that failed for good; the problem to answer it with.
    func failed(_ error: any Error, group: RouteGroup, logger: Logger) -> Problem {
        let failure = UpstreamFailure(error)
        Counter(label: "gateway_upstream_errors_total", dimensions: [("upstream", group.name), ("kind", failure.rawValue)], factory: metrics).increment()
        logger.warning("Upstream request failed", metadata: ["upstream": "\(group.name)", "failure": "\(failure.rawValue)", "error": "\(error)"])
        return failure.problem(group.name)
    }

    /// A failed exchange, and whether the upstream can have seen nothing of the request.
    private struct ExchangeError: Error {
        var underlying: any Error
        var unseen: Bool
    }

    /// One request and the head of its answer over one connection; the answer's body is read
    /// before returning when it is small, or streams from the returned response.
    private func exchange(_ head: HTTPRequestHead, body: RequestBody?, on pool: UpstreamPool, loop: any EventLoop, deadline: NIODeadline) async throws(ExchangeError) -> Response {
        let connection: UpstreamConnection
        let reused: Bool
        do {
            (connection, reused) = try await pool.lease(on: loop)
        } catch {
            // No connection, so nothing was sent (for a busy pool: no retry, it stays busy).
            throw ExchangeError(underlying: error, unseen: error as? UpstreamPoolError != .busy)
        }
        var answer: HTTPResponseHead
        var bodyComplete = true
        do {
            connection.begin(deadline: deadline)
            if let body {
                (answer, bodyComplete) = try await sendStreaming(head, body: body, over: connection)
            } else {
                try await connection.write([.head(head), .end(nil)])
                answer = try await Self.head(from: connection)
            }
            connection.answerBegan()
        } catch {
            connection.close()
            let beforeAnswer = (error as? UpstreamExchangeError).map { $0 == .closedBeforeResponse } ?? (error is ChannelError || error is IOError)
            throw ExchangeError(underlying: error, unseen: reused && beforeAnswer)
        }

        let headers = Self.responseHeaders(answer)
        let status = HTTPResponse.Status(code: Int(answer.status.code), reasonPhrase: answer.status.reasonPhrase)
        let length = answer.headers.first(name: "content-length").flatMap(Int.init)
        let reusable = bodyComplete && answer.isKeepAlive
        if Self.readsWhole(answer, length: length, to: head.method) {
            var whole: ByteBuffer?
            do {
                reading: while true {
                    switch try await connection.next() {
                    case .body(var chunk):
                        if whole == nil { whole = chunk } else { whole!.writeBuffer(&chunk) }
                    case .end:
                        break reading
                    case .head:
                        throw UpstreamExchangeError.malformed
                    }
                }
            } catch {
                connection.close()
                throw ExchangeError(underlying: error, unseen: false)
            }
            pool.release(connection, reusable: reusable)
            // A buffer body goes out as one write of head, body and end.
            let body: ResponseBody = if head.method == .HEAD {
                ResponseBody(contentLength: length) { writer in try await writer.finish(nil) }
            } else if let whole {
                ResponseBody(byteBuffer: whole)
            } else {
                ResponseBody()
            }
            return Response(status: status, headers: headers, body: body)
        }
        let lease = StreamingLease(connection: connection, pool: pool, reusable: reusable)
        return Response(status: status, headers: headers, body: ResponseBody(contentLength: length) { writer in
            try await lease.relay(to: &writer)
        })
    }

    /// Sends the request head and its body, while waiting for the answer's head: an upstream may
    /// refuse a request before reading all of its body. Returns whether the body was all sent
    /// (if not, the connection cannot be reused).
    private func sendStreaming(_ head: HTTPRequestHead, body: RequestBody, over connection: UpstreamConnection) async throws -> (HTTPResponseHead, Bool) {
        try await withThrowingTaskGroup(of: Void.self) { group in
            let sent = Atomic<Bool>(false)
            group.addTask {
                try await connection.write([.head(head)])
                for try await chunk in body {
                    try await connection.write([.body(.byteBuffer(chunk))])
                }
                try await connection.write([.end(nil)])
                sent.store(true, ordering: .relaxed)
            }
            let answer = try await Self.head(from: connection)
            guard sent.load(ordering: .relaxed) else {
                group.cancelAll()
                return (answer, false)
            }
            try await group.waitForAll()
            return (answer, true)
        }
    }

    /// Whether an answer (whose `Content-Length` is `length`) is read whole before it is passed
    /// on: one without a body, or with a length of at most `wholeAnswerLimit`.
    static func readsWhole(_ answer: HTTPResponseHead, length: Int?, to method: HTTPMethod) -> Bool {
        if method == .HEAD || answer.status == .noContent || answer.status == .notModified { return true }
        return (length ?? .max) <= wholeAnswerLimit
    }

    /// The headers of an upstream's answer that the client gets (before the gateway's own).
    static func responseHeaders(_ answer: HTTPResponseHead) -> HTTPFields {
        var headers = ForwardedHeaders.endToEnd(answer.headers)
        headers[.requestID] = nil  // the gateway sets ours, which the upstream echoed anyway
        return headers
    }

    private static func head(from connection: UpstreamConnection) async throws -> HTTPResponseHead {
        guard case .head(let head) = try await connection.next() else { throw UpstreamExchangeError.malformed }
        return head
    }

    /// The head of the upstream call for a client's request (`head`, from `peer`).
    func makeHead(_ request: HTTPRequest, framing: BodyFraming, peer: SocketAddress?, requestID: String, pool: UpstreamPool) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count + 6)
        headers.add(name: "Host", value: pool.authority)
        for field in ForwardedHeaders.endToEnd(request.headerFields) where !Self.gatewayOwned.contains(field.name) {
            headers.add(name: field.name.rawName, value: field.value)
        }
        let forwarding = forwarding(peer: ClientAddressResolver.text(of: peer), forwardedFor: request.headerFields[.xForwardedFor], forwardedProto: request.headerFields[.xForwardedProto])
        headers.add(name: "X-Forwarded-For", value: forwarding.forwardedFor)
        headers.add(name: "X-Forwarded-Proto", value: forwarding.proto)
        if let host = request.authority {
            headers.add(name: "X-Forwarded-Host", value: host)
        }
        headers.add(name: "X-Request-Id", value: requestID)
        switch framing {
        case .length(let length):
            headers.add(name: "Content-Length", value: String(length))
        case .chunked:
            headers.add(name: "Transfer-Encoding", value: "chunked")
        case .none where [.post, .put, .patch].contains(request.method):
            headers.add(name: "Content-Length", value: "0")
        case .none:
            break
        }
        return HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: pool.basePath + (request.path ?? ""), headers: headers)
    }

    /// The `X-Forwarded-For` and `X-Forwarded-Proto` of a call from the address `peer`: the client's
    /// address as we saw it, after the chain and scheme that trusted proxies in front of us
    /// reported (an untrusted client cannot write its own).
    func forwarding(peer: String, forwardedFor: String?, forwardedProto: String?) -> (forwardedFor: String, proto: String) {
        let fromTrustedProxy = addresses.isTrusted(peer)
        let chain = fromTrustedProxy ? forwardedFor : nil
        return (chain.map { "\($0), \(peer)" } ?? peer, fromTrustedProxy ? forwardedProto ?? "http" : "http")
    }

    /// How a client's request body is framed, read once from its headers.
    enum BodyFraming {
        case none
        case length(Int64)
        case chunked

        init(_ headers: HTTPFields) {
            if let length = headers[.contentLength].flatMap(Int64.init) {
                self = .length(length)
            } else {
                self = headers[.transferEncoding] != nil ? .chunked : .none
            }
        }

        var hasBody: Bool {
            switch self {
            case .none: false
            case .length(let length): length > 0
            case .chunked: true
            }
        }
    }

    /// Set by the gateway itself, whatever the client sent.
    private static let gatewayOwned: Set<HTTPField.Name> = [.xForwardedFor, .xForwardedProto, .xForwardedHost, .requestID]
}

/// A connection whose answer streams to the client after the handler has returned: given back
/// to the pool when the answer has been relayed to its end, closed if relaying fails or never
/// happens.
private final class StreamingLease: Sendable {
    let connection: UpstreamConnection
    let pool: UpstreamPool
    let reusable: Bool
    private let done = Atomic<Bool>(false)

    init(connection: UpstreamConnection, pool: UpstreamPool, reusable: Bool) {
        self.connection = connection
        self.pool = pool
        self.reusable = reusable
    }

    func relay(to writer: inout some ResponseBodyWriter) async throws {
        do {
            while true {
                switch try await connection.next() {
                case .body(let chunk):
                    try await writer.write(chunk)
                case .end:
                    done.store(true, ordering: .relaxed)
                    pool.release(connection, reusable: reusable)
                    try await writer.finish(nil)
                    return
                case .head:
                    throw UpstreamExchangeError.malformed
                }
            }
        } catch {
            if !done.exchange(true, ordering: .relaxed) { connection.close() }
            throw error
        }
    }

    deinit {
        if !done.load(ordering: .relaxed) { connection.close() }
    }
}

/// How an upstream exchange failed, as far as the client is concerned.
enum UpstreamFailure: String, Sendable {
    /// No connection could be made: 503, and safe to retry.
    case unreachable
    /// Connected, but no answer in time: 504.
    case timeout
    /// The exchange broke: 502.
    case broken

    init(_ error: any Error) {
        if let error = error as? UpstreamExchangeError {
            self = error == .timedOut ? .timeout : .broken
        } else if let error = error as? UpstreamPoolError {
            self = error == .busy ? .unreachable : .broken
        } else if error is NIOConnectionError || (error as? IOError).map({ [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH].contains($0.errnoCode) }) == true {
            self = .unreachable
        } else if let error = error as? ChannelError, case .connectTimeout = error {
            self = .unreachable
        } else {
            self = .broken
        }
    }

    func problem(_ upstream: String) -> Problem {
        switch self {
        case .unreachable: GatewayProblem.unavailable(upstream)
        case .timeout: GatewayProblem.timedOut(upstream)
        case .broken: GatewayProblem.badGateway(upstream)
        }
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
    static let xForwardedProto = Self("X-Forwarded-Proto")!
    static let xForwardedHost = Self("X-Forwarded-Host")!
}
