import Foundation
import HTTPEdge
import HTTPTypes
import Logging
import Metrics
import NIOCore
import NIOPosix
import ServiceKit
import Synchronization

/// What every client connection's `EdgeProxyHandler` shares: the edge checks, the upstream pools,
/// CORS, and how answers are written and recorded.
struct EdgeProxy: Sendable {
    let checks: EdgeChecks
    /// The pool of each route group's service, by group name.
    let pools: [String: UpstreamPool]
    let cors: CORSPolicy
    let requests: RequestRecorder
    /// Where `gateway_upstream_errors_total` is counted: the service's registry.
    let metrics: any MetricsFactory
    let logger: Logger
    /// The `Server` header of every answer (the router's answers carry the same).
    let serverName: String
    let dates = HTTPDates()

    /// The limits each connection's state machine applies.
    let limits = EdgeLimits()

    /// What every answer of the gateway carries, and the end of its head.
    func stamp(_ bytes: inout ByteBuffer, requestID: String, framing: String? = nil, _ value: String = "") {
        bytes.writeField("X-Request-Id", requestID)
        if let framing { bytes.writeField(framing, value) }
        bytes.writeField("Date", dates.now())
        bytes.writeField("Server", serverName)
        bytes.writeStaticString("\r\n")
    }

    /// A whole answer of the gateway's own, as bytes: `problem` (for `path`, in the error shape a
    /// client expects there: a GoTrue client's `X-Supabase-Api-Version` is in `head`), with
    /// `extra` fields (rate limits, CORS) and `Connection: close` when `closing`.
    func problemAnswer(
        _ problem: Problem,
        path: String,
        head: MessageHead? = nil,
        requestID: String,
        closing: Bool = false,
        allocator: ByteBufferAllocator,
        extra: (inout ByteBuffer) -> Void = { _ in }
    ) -> ByteBuffer {
        var requestFields = HTTPFields()
        requestFields[.supabaseAPIVersion] = head?.combined(.xSupabaseAPIVersion)
        let (fields, body) = problem.document(path: path, requestID: requestID, headers: requestFields)
        var answer = allocator.buffer(capacity: 512 + body.readableBytes)
        answer.writeStatusLine(problem.status.code, reason: problem.status.reasonPhrase)
        for field in fields { answer.writeField(field.name.rawName, field.value) }
        extra(&answer)
        if closing { answer.writeField("Connection", "close") }
        stamp(&answer, requestID: requestID, framing: "Content-Length", String(body.readableBytes))
        answer.writeImmutableBuffer(body)
        return answer
    }

    /// The answer to bytes that are not a request the gateway can read: 400 `malformed-request`,
    /// or 431 for a head past `MessageHead.maximumSize`. The connection closes after it.
    func malformedRequestAnswer(tooLarge: Bool = false, allocator: ByteBufferAllocator) -> ByteBuffer {
        let problem =
            tooLarge
            ? Problem(
                status: .requestHeaderFieldsTooLarge,
                type: "header-too-large",
                detail: "The request's head is longer than \(MessageHead.maximumSize) bytes."
            )
            : Problem(status: .badRequest, type: "malformed-request", detail: "The request is not well-formed HTTP/1.1.")
        return problemAnswer(problem, path: "", requestID: RequestIDGenerator.next(), closing: true, allocator: allocator)
    }

    /// The logger of one request: every line carries its id.
    func logger(for requestID: String) -> Logger {
        var logger = logger
        logger[metadataKey: "request_id"] = .string(requestID)
        return logger
    }

    /// Counts and logs a call that failed for good; the problem to answer it with.
    func failed(_ failure: UpstreamFailure, _ error: any Error, group: RouteGroup, logger: Logger) -> Problem {
        Counter(label: "gateway_upstream_errors_total", dimensions: [("upstream", group.name), ("kind", failure.rawValue)], factory: metrics)
            .increment()
        logger.warning("Upstream request failed", metadata: ["upstream": "\(group.name)", "failure": "\(failure.rawValue)", "error": "\(error)"])
        return failure.problem(group.name)
    }

    /// The `X-Forwarded-For` and `X-Forwarded-Proto` of a call from the address `peer`: the client's
    /// address as we saw it, after the chain and scheme that trusted proxies in front of us
    /// reported (an untrusted client cannot write its own).
    func forwarding(peer: String, forwardedFor: String?, forwardedProto: String?) -> (forwardedFor: String, proto: String) {
        let fromTrustedProxy = checks.addresses.isTrusted(peer)
        let chain = fromTrustedProxy ? forwardedFor : nil
        return (chain.map { "\($0), \(peer)" } ?? peer, fromTrustedProxy ? forwardedProto ?? "http" : "http")
    }
}

extension UpstreamFailure {
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
}

extension ByteBuffer {
    /// `name: value` and its `CRLF`, copied in one reservation (a head has a dozen of these, and
    /// four writes each cost more than the copying).
    mutating func writeField(_ name: String, _ value: String) {
        var name = name
        var value = value
        _ = name.withUTF8 { name in
            value.withUTF8 { value in
                writeWithUnsafeMutableBytes(minimumWritableBytes: name.count + value.count + 4) { out in
                    UnsafeMutableRawBufferPointer(rebasing: out[0..<name.count]).copyMemory(from: UnsafeRawBufferPointer(name))
                    var at = name.count
                    out[at] = .colon
                    out[at + 1] = .space
                    at += 2
                    UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + value.count)]).copyMemory(from: UnsafeRawBufferPointer(value))
                    at += value.count
                    out[at] = .cr
                    out[at + 1] = .lf
                    at += 2
                    return at
                }
            }
        }
    }

    /// `HTTP/1.1 <status> <reason>` and its `CRLF`, in one reservation as `writeField`.
    mutating func writeStatusLine(_ status: Int, reason: String) {
        guard (100...999).contains(status) else {  // never: answers are read as 100–599, problems are HTTPTypes' statuses
            writeString("HTTP/1.1 \(status) \(reason)\r\n")
            return
        }
        var reason = reason
        _ = reason.withUTF8 { reason in
            writeWithUnsafeMutableBytes(minimumWritableBytes: reason.count + 15) { out in
                let prefix: StaticString = "HTTP/1.1 "
                prefix.withUTF8Buffer { UnsafeMutableRawBufferPointer(rebasing: out[0..<9]).copyMemory(from: UnsafeRawBufferPointer($0)) }
                out[9] = UInt8(ascii: "0") + UInt8(status / 100)
                out[10] = UInt8(ascii: "0") + UInt8(status / 10 % 10)
                out[11] = UInt8(ascii: "0") + UInt8(status % 10)
                out[12] = .space
                UnsafeMutableRawBufferPointer(rebasing: out[13..<(13 + reason.count)]).copyMemory(from: UnsafeRawBufferPointer(reason))
                out[13 + reason.count] = .cr
                out[14 + reason.count] = .lf
                return reason.count + 15
            }
        }
    }
}
