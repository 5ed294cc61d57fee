import HTTPEdge
import HTTPTypes
import NIOCore
import ServiceKit

/// How a proxied call's heads are written, each way, and how it is recorded.
extension EdgeProxy {
    /// The call as the service gets it: its path under the service's base path, the client's
    /// end-to-end fields as they came, and the gateway's forwarding fields, request id and framing.
    func forwardedHead(of call: ProxiedCall, to pool: UpstreamPool, peer: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        let request = call.request
        let head = request.head
        var bytes = allocator.buffer(capacity: head.bytes.readableBytes + 256)
        bytes.writeString(request.method.rawValue)
        bytes.writeStaticString(" ")
        bytes.writeString(pool.basePath)
        bytes.writeString(request.target)
        bytes.writeStaticString(" HTTP/1.1\r\n")
        bytes.writeField("Host", pool.authority)
        head.writeEndToEndFields(to: &bytes, dropping: [.xForwardedFor, .xForwardedProto, .xForwardedHost, .xRequestID, .expect])
        let forwarding = forwarding(peer: peer, forwardedFor: call.forwardedFor, forwardedProto: head.combined(.xForwardedProto))
        bytes.writeField("X-Forwarded-For", forwarding.forwardedFor)
        bytes.writeField("X-Forwarded-Proto", forwarding.proto)
        if let host = head.combined(.host) { bytes.writeField("X-Forwarded-Host", host) }
        bytes.writeField("X-Request-Id", call.requestID)
        switch request.body {
        case .length(let length) where length > 0: bytes.writeField("Content-Length", String(length))
        case .chunked: bytes.writeField("Transfer-Encoding", "chunked")
        case .none, .length:
            if request.method == .post || request.method == .put || request.method == .patch { bytes.writeField("Content-Length", "0") }
        }
        bytes.writeStaticString("\r\n")
        return bytes
    }

    /// The answer's head as the client gets it: the service's end-to-end fields as they came, then
    /// the gateway's own (rate limit, CORS, request id, and `framing`).
    func answerHead(_ answer: AnswerReader.Head, framing: AnswerFraming, of call: ProxiedCall, allocator: ByteBufferAllocator) -> ByteBuffer {
        let head = answer.message
        var bytes = allocator.buffer(capacity: head.bytes.readableBytes + 256)
        bytes.writeStatusLine(answer.status, reason: head.string(answer.reason))
        head.writeEndToEndFields(to: &bytes, dropping: [.xRequestID, .date, .server])
        if let rateLimit = call.rateLimit {
            rateLimit.decision.forEachField(limit: rateLimit.limit, includeRetryAfter: false) { bytes.writeField($0.rawName, $1) }
        }
        writeCORSFields(call, to: &bytes)
        switch framing.connection {
        case .unstated: break
        case .keepAlive: bytes.writeField("Connection", "keep-alive")
        case .close: bytes.writeField("Connection", "close")
        }
        switch framing.length {
        case .none: stamp(&bytes, requestID: call.requestID)
        case .contentLength(let length): stamp(&bytes, requestID: call.requestID, framing: "Content-Length", String(length))
        case .chunked: stamp(&bytes, requestID: call.requestID, framing: "Transfer-Encoding", "chunked")
        }
        return bytes
    }

    /// A whole answer of the gateway's own to `call`, and its status.
    func answer(_ answer: EdgeAnswer, to call: ProxiedCall, closes: Bool, allocator: ByteBufferAllocator) -> (bytes: ByteBuffer, status: Int) {
        let problem: Problem
        switch answer {
        case .preflight(let fields):
            var bytes = allocator.buffer(capacity: 512)
            bytes.writeStatusLine(204, reason: "No Content")
            for field in fields { bytes.writeField(field.name.rawName, field.value) }
            if closes { bytes.writeField("Connection", "close") }
            stamp(&bytes, requestID: call.requestID)
            return (bytes, 204)
        case .refusal(let error):
            problem = error as? Problem ?? Problem(status: .internalServerError, type: "internal-error", detail: "The gateway failed this call.")
        case .bodyTooLarge(let limit):
            problem = .bodyTooLarge(limit: limit)
        case .malformedBody:
            problem = Problem(status: .badRequest, type: "malformed-request", detail: "The request's chunked body is malformed.")
        case .upstreamFailed(let failure, let error):
            problem = failed(failure, error, group: call.group, logger: logger(for: call.requestID))
        }
        let bytes = problemAnswer(
            problem,
            path: call.request.path,
            head: call.request.head,
            requestID: call.requestID,
            closing: closes,
            allocator: allocator
        ) { bytes in writeCORSFields(call, to: &bytes) }
        return (bytes, problem.status.code)
    }

    /// Counts and logs a call that ended with `status`.
    func record(_ call: ProxiedCall, status: Int) {
        let logger = logger.logLevel <= .info ? logger(for: call.requestID) : logger
        requests.record(
            method: call.request.method,
            path: call.request.path,
            route: call.group.route,
            status: HTTPResponse.Status(code: status),
            elapsed: call.start.duration(to: .now),
            logger: logger
        )
    }

    private func writeCORSFields(_ call: ProxiedCall, to bytes: inout ByteBuffer) {
        guard let origin = call.corsOrigin else { return }
        cors.answerFields(origin: origin) { bytes.writeField($0.rawName, $1) }
    }
}
