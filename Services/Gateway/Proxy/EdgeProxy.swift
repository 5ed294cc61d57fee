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

    /// Answers with a `Content-Length` up to this size are read whole before they are passed on,
    /// which frees their connection at once and lets a service that breaks off still be answered
    /// with a 502; larger ones, and those of unknown length, stream.
    static let wholeAnswerLimit = 64 << 10

    /// The body of a refused request, when its `Content-Length` is at most this, is read and
    /// dropped so the connection can carry the next request; a larger or chunked one ends the
    /// connection after the answer. Generous, as the router's path was: a client still sending
    /// the body of an upload refused as too large (AsyncHTTPClient, say) fails on the
    /// connection's end rather than reading the 413 before it.
    static let discardLimit = 64 << 20

    /// How long a connection that answered before the client had sent all of its body keeps
    /// reading (and dropping) what comes after its answer, so that the client reads the answer
    /// rather than a reset (RFC 9112 §9.6).
    static let lingerTime = TimeAmount.seconds(2)

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
    func failed(_ error: any Error, group: RouteGroup, logger: Logger) -> Problem {
        let failure = UpstreamFailure(error)
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
        } else if error is NIOConnectionError
            || (error as? IOError).map({ [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH].contains($0.errnoCode) }) == true
        {
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
}

extension ByteBuffer {
    mutating func writeField(_ name: String, _ value: String) {
        writeString(name)
        writeStaticString(": ")
        writeString(value)
        writeStaticString("\r\n")
    }

    mutating func writeStatusLine(_ status: Int, reason: String) {
        writeStaticString("HTTP/1.1 ")
        writeString(String(status))
        writeStaticString(" ")
        writeString(reason)
        writeStaticString("\r\n")
    }
}

/// The `Date` header's value, made once a second.
final class HTTPDates: Sendable {
    private let cached = Mutex<(second: Int, text: String)>((-1, ""))
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1 January 1970 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    func now() -> String {
        let second = Int(Date().timeIntervalSince1970)
        return cached.withLock { cached in
            if cached.second != second { cached = (second, Self.format(second)) }
            return cached.text
        }
    }

    /// RFC 9110's IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ secondsSince1970: Int) -> String {
        let split = secondsSince1970.quotientAndRemainder(dividingBy: 86_400)
        let (hour, minute, second) = (split.remainder / 3_600, split.remainder / 60 % 60, split.remainder % 60)
        // The civil date of a day count (Howard Hinnant's days-to-civil algorithm).
        let z = split.quotient + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        let weekday = days[((split.quotient % 7) + 7) % 7]
        return "\(weekday), \(two(day)) \(months[month - 1]) \(year) \(two(hour)):\(two(minute)):\(two(second)) GMT"
    }
}
