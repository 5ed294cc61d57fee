import Foundation
import HTTPTypes
import HummingbirdCore
import KeySetClient
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import ServiceKit
import Synchronization

/// What every connection's `DirectProxyHandler` shares: the edge checks, the upstream pools and
/// how answers are recorded.
struct DirectProxy: Sendable {
    let checks: EdgeChecks
    let proxy: ReverseProxy
    let cors: CORSPolicy
    let requests: RequestRecorder
    /// `gateway_direct_requests_total`: calls the direct path forwarded (the rest went through
    /// the router).
    let forwarded: Counter
    let logger: Logger
    /// The `Server` header of every answer (the router's path sets the same).
    let serverName: String
    let dates = HTTPDates()

    /// The call when the direct path can take it on: a GET without a body or `Connection: close`
    /// (and without an `Origin` when CORS is on), to a route group with a service, whose token
    /// the cached keys settle. Anything else is the router's.
    func call(for request: ClientRequest) -> DirectCall? {
        guard request.isGet, request.bodyLength == 0, !request.closes,
              !(cors.isEnabled && request.head.count(.origin) > 0)
        else { return nil }
        let path = URI(request.target).path
        guard let group = checks.routes.group(for: path), let pool = proxy.pools[group.name],
              case .some(let user) = checks.acceptedWithoutWaiting(bearer: HTTPFields.bearerToken(in: request.head.combined(.authorization)), for: group)
        else { return nil }
        return DirectCall(request: request, path: path, group: group, pool: pool, user: user)
    }

    /// What every answer of the gateway carries, and the end of its head.
    func stamp(_ bytes: inout ByteBuffer, requestID: String, framing: String? = nil, _ value: String = "") {
        bytes.writeField("X-Request-Id", requestID)
        if let framing { bytes.writeField(framing, value) }
        bytes.writeField("Date", dates.now())
        bytes.writeField("Server", serverName)
        bytes.writeStaticString("\r\n")
    }

    /// A whole answer with `problem` (for `path`, in the error shape a client expects there: a
    /// GoTrue client's `X-Supabase-Api-Version` is in `head`), as bytes; `closing` adds
    /// `Connection: close`.
    func problemAnswer(_ problem: Problem, path: String, head: MessageHead? = nil, requestID: String, closing: Bool = false, allocator: ByteBufferAllocator) -> ByteBuffer {
        var requestFields = HTTPFields()
        requestFields[.supabaseAPIVersion] = head?.combined(.xSupabaseAPIVersion)
        let (fields, body) = problem.document(path: path, requestID: requestID, headers: requestFields)
        var answer = allocator.buffer(capacity: 512 + body.readableBytes)
        answer.writeStatusLine(problem.status.code, reason: problem.status.reasonPhrase)
        for field in fields { answer.writeField(field.name.rawName, field.value) }
        if closing { answer.writeField("Connection", "close") }
        stamp(&answer, requestID: requestID, framing: "Content-Length", String(body.readableBytes))
        answer.writeImmutableBuffer(body)
        return answer
    }

    /// The answer to a request SwiftNIO's parser refused.
    func malformedRequestAnswer(allocator: ByteBufferAllocator) -> ByteBuffer {
        let problem = Problem(status: .badRequest, type: "malformed-request", detail: "The request is not well-formed HTTP/1.1.")
        return problemAnswer(problem, path: "", requestID: RequestIDGenerator.next(), closing: true, allocator: allocator)
    }

    /// The logger of one request: every line carries its id.
    func logger(for requestID: String) -> Logger {
        var logger = logger
        logger[metadataKey: "request_id"] = .string(requestID)
        return logger
    }
}

/// A client's request head as the direct path reads it.
struct ClientRequest {
    let head: MessageHead
    let isGet: Bool
    /// The request target, in origin form (`/path?query`).
    let target: String
    /// The length of its body (`Content-Length`; 0 without one).
    let bodyLength: Int
    /// `Connection: close`: the client's last request on the connection.
    let closes: Bool

    /// `nil` when the direct path cannot tell where the request ends or what follows it: not
    /// HTTP/1.1 in origin form, a chunked body, an upgrade, `Expect`, a `Content-Length` that is
    /// not one number.
    init?(_ head: MessageHead) {
        let line = head.withBytes(0..<head.startLineLength) { bytes -> (isGet: Bool, target: Range<Int>)? in
            var index = 0
            while index < bytes.count, bytes[index].isTokenCharacter { index += 1 }
            guard index > 0, index < bytes.count, bytes[index] == .space else { return nil }
            let isGet = index == 3 && bytes.starts(with: "GET".utf8)
            let targetStart = index + 1
            index = targetStart
            while index < bytes.count, (0x21...0x7E).contains(bytes[index]) { index += 1 }
            guard index > targetStart, bytes[targetStart] == UInt8(ascii: "/"), index < bytes.count, bytes[index] == .space,
                  bytes.count - index - 1 == 8, UnsafeRawBufferPointer(rebasing: bytes[(index + 1)...]).elementsEqual("HTTP/1.1".utf8)
            else { return nil }
            return (isGet, targetStart..<index)
        }
        guard let line, head.count(.transferEncoding) == 0, head.count(.upgrade) == 0, head.count(.expect) == 0 else { return nil }
        let connection = head.connectionOptions
        guard !connection.contains("upgrade") else { return nil }
        switch head.contentLength {
        case .none: bodyLength = 0
        case .length(let length): bodyLength = length
        case .invalid: return nil
        }
        self.head = head
        self.isGet = line.isGet
        self.target = head.string(line.target)
        self.closes = connection.contains("close")
    }
}

/// A request the direct path forwards. A class: the exchange's steps each read it, and a copy
/// of the struct it would be costs a retain of every reference in its request and route group.
final class DirectCall {
    let request: ClientRequest
    let path: String
    let group: RouteGroup
    let pool: UpstreamPool
    let user: String?

    init(request: ClientRequest, path: String, group: RouteGroup, pool: UpstreamPool, user: String?) {
        self.request = request
        self.path = path
        self.group = group
        self.pool = pool
        self.user = user
    }
}

/// Forwards the proxied GETs of one client connection to their service as bytes, on the
/// connection's own event loop: no HTTP parser of SwiftNIO's, no header objects, no task, no trip
/// through the router. The gateway's most frequent call costs the least.
///
/// It is the first handler of the connection's pipeline, in front of SwiftNIO's HTTP parser. It
/// reads each request's head itself (`MessageHead`, a strict reading of RFC 9112). A GET that
/// `DirectProxy.call(for:)` accepts, arriving while no routed request is in progress, is checked
/// against its rate limit and written to a `DirectUpstreamConnection` of the same loop with the
/// forwarding headers set and hop-by-hop ones dropped; the answer's head is rewritten the same
/// way and its body passes on as it comes (pausing the upstream while the client is slow).
///
/// Every other request passes on, as its bytes, to SwiftNIO's parser and the router, which does
/// the same checks and forwarding in its async path: requests with a body, a token that needs the
/// key set fetched or is refused, a rate limit exceeded, CORS, realtime, health and metrics. The
/// client sees the same answers either way. While a routed answer is outstanding, later requests
/// are routed too, so answers leave in the order requests came (`RoutedAnswerTracker` counts
/// them). A request whose end cannot be told (a chunked body, an upgrade) or that breaks the
/// grammar leaves the rest of the connection to the router.
///
/// Failures answer as the router's path does: 504 when no answer began in the group's time, 502
/// when the exchange broke, a cut connection when it broke after the answer began. A reused
/// connection the service had closed, or one that could not be made, leaves the call to the
/// router, which tries it again over a new connection or answers 503.
final class DirectProxyHandler: ChannelDuplexHandler, RemovableChannelHandler, DirectUpstreamReceiver {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private enum Mode {
        /// At the start of a request: heads are read here.
        case reading
        /// Passing on the rest of a routed request's body.
        case passingBody(remaining: Int)
        /// Everything goes to SwiftNIO's parser from now on.
        case passthrough
    }

    /// One direct call in progress.
    private final class Exchange {
        let call: DirectCall
        let start = ContinuousClock.now
        var connection: DirectUpstreamConnection?
        /// The connection carried calls before (so one that closes before answering most likely
        /// closed while idle, and never saw the call).
        var reused = false
        var requestID = ""
        /// The rate limit's answer to the call, for the `RateLimit-*` fields of the answer.
        var rateLimit: (decision: RateLimitDecision, limit: RateLimit)?
        var answer = AnswerReader()
        var head: AnswerReader.Head?
        /// A small answer's body, kept until it has all come: until then a break-off can still be
        /// answered with a 502.
        var whole: ByteBuffer?
        /// The answer's head has gone to the client.
        var headSent = false
        /// When the answer must have begun.
        var deadline = NIODeadline.distantFuture
        /// Bytes written to the client since the last flush.
        var unflushed = false
        /// The upstream is paused until the client takes what was written.
        var blocked = false

        init(call: DirectCall) {
            self.call = call
        }
    }

    private let direct: DirectProxy
    private var context: ChannelHandlerContext?
    private var mode = Mode.reading
    /// Bytes read and not yet handled: a head not yet whole, or requests pipelined behind a
    /// direct call (reading pauses meanwhile).
    private var pending = ByteBuffer()
    private var exchange: Exchange?
    /// Requests passed to the router whose answers have not ended.
    private var routed = 0
    /// Bytes have gone on to the handlers behind this one (a routed request, an upgrade to a
    /// WebSocket): they answer a graceful-shutdown notice themselves.
    private var passedOn = false
    private var firedSinceReadComplete = false
    private var readHeld = false
    private var quiesceRequested = false
    /// The timer for the deadlines of this connection's calls, and the instant it is set for.
    private var deadlineTimer: Scheduled<Void>?
    private var armedFor: NIODeadline?
    /// The client's address as text, as sent upstream and keyed for rate limits (made once: it
    /// costs a formatting of the address).
    private var peerIP: String?

    init(_ direct: DirectProxy) {
        self.direct = direct
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        abandon()
        self.context = nil
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if case .passthrough = mode, pending.readableBytes == 0 {
            fire(bytes, context: context)
            return
        }
        if pending.readableBytes == 0 {
            pending = bytes
        } else {
            var bytes = bytes
            pending.writeBuffer(&bytes)
        }
        handlePending(context: context)
    }

    /// Handles what has been read, up to a direct call's start (what follows it waits for its end).
    private func handlePending(context: ChannelHandlerContext) {
        while exchange == nil, pending.readableBytes > 0 {
            switch mode {
            case .passthrough:
                fire(pending, context: context)
                pending.clear()
            case .passingBody(let remaining):
                let count = min(remaining, pending.readableBytes)
                fire(pending.readSlice(length: count)!, context: context)
                mode = count == remaining ? .reading : .passingBody(remaining: remaining - count)
            case .reading:
                switch MessageHead.take(from: &pending) {
                case .incomplete:
                    return
                case .notPlain:
                    mode = .passthrough
                case .head(let head):
                    guard let request = ClientRequest(head) else {
                        fire(head.bytes, context: context)
                        mode = .passthrough
                        continue
                    }
                    if routed == 0, !quiesceRequested, let call = direct.call(for: request) {
                        start(call, context: context)
                    } else {
                        route(request, context: context)
                    }
                }
            }
        }
        if pending.readableBytes == 0 { pending.clear() }
    }

    private func route(_ request: ClientRequest, context: ChannelHandlerContext) {
        routed += 1
        fire(request.head.bytes, context: context)
        if request.closes {
            mode = .passthrough
        } else if request.bodyLength > 0 {
            mode = .passingBody(remaining: request.bodyLength)
        }
    }

    private func fire(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        firedSinceReadComplete = true
        passedOn = true
        context.fireChannelRead(wrapInboundOut(bytes))
    }

    /// The handlers behind hear of a read's end once bytes have gone on to them: on a connection
    /// the direct path alone has served they have nothing to act on (their idle tracking counts
    /// reads, which they do not see either), and the event would pass through each on every read.
    func channelReadComplete(context: ChannelHandlerContext) {
        firedSinceReadComplete = false
        if passedOn { context.fireChannelReadComplete() }
    }

    func read(context: ChannelHandlerContext) {
        if exchange != nil, pending.readableBytes > 0 {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// A routed request's answer has ended.
    fileprivate func routedAnswerEnded() {
        routed = max(0, routed - 1)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        quiesceRequested = true
        quiesceIfIdle(context: context)
    }

    /// SwiftNIO's parser refused what the client sent: a 400 problem when nothing else is being
    /// answered on the connection, which then closes (the bytes after it cannot be trusted to
    /// start a request).
    fileprivate func refuseMalformed() {
        guard let context else { return }
        mode = .passthrough
        pending.clear()
        if exchange == nil, routed == 0 {
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(direct.malformedRequestAnswer(allocator: context.channel.allocator))), promise: nil)
        }
        context.close(promise: nil)
    }

    /// After a graceful-shutdown notice, once no direct call is in progress: the handlers behind
    /// this one finish what they have and close the connection, or, when the direct path alone
    /// served it, the connection closes now.
    private func quiesceIfIdle(context: ChannelHandlerContext) {
        guard quiesceRequested, exchange == nil else { return }
        quiesceRequested = false
        mode = .passthrough
        handlePending(context: context)
        if passedOn {
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        } else {
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        abandon()
        context.fireChannelInactive()
    }

    /// The client is gone: a call in progress can only be cut off.
    private func abandon() {
        if let exchange {
            exchange.connection?.detach()
            exchange.connection?.close()
            self.exchange = nil
        }
        deadlineTimer?.cancel()
        deadlineTimer = nil
        pending.clear()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let exchange, exchange.blocked {
            exchange.blocked = false
            exchange.connection?.setReading(true)
        }
        context.fireChannelWritabilityChanged()
    }

    // MARK: The exchange

    private func start(_ call: DirectCall, context: ChannelHandlerContext) {
        let exchange = Exchange(call: call)
        self.exchange = exchange
        if let connection = call.pool.takeParkedDirect(on: context.eventLoop) {
            return send(exchange, over: connection, reused: true, context: context)
        }
        do {
            try call.pool.connectDirect(on: context.eventLoop).assumeIsolated().whenComplete { result in
                guard self.exchange === exchange else {
                    if case .success(let connection) = result { call.pool.releaseDirect(connection, reusable: true) }
                    return
                }
                switch result {
                case .success(let connection): self.send(exchange, over: connection, reused: false, context: context)
                case .failure: self.handBack(exchange, context: context)
                }
            }
        } catch {
            handBack(exchange, context: context)  // too many connections: the router answers 503
        }
    }

    private func send(_ exchange: Exchange, over connection: DirectUpstreamConnection, reused: Bool, context: ChannelHandlerContext) {
        let call = exchange.call
        let peerIP = peerIP(context)
        let forwardedFor = call.request.head.combined(.xForwardedFor)
        let (decision, limit) = direct.checks.takeRateLimit(for: call.group, user: call.user, peerIP: peerIP, forwardedFor: forwardedFor)
        guard decision.allowed else {
            // The router answers the 429 (a refused take costs the bucket nothing).
            call.pool.releaseDirect(connection, reusable: true)
            return handBack(exchange, context: context)
        }
        direct.forwarded.increment()
        exchange.requestID = RequestIDGenerator.id(requested: call.request.head.combined(.xRequestID))
        exchange.rateLimit = (decision, limit)
        exchange.connection = connection
        exchange.reused = reused
        connection.attach(self)
        exchange.deadline = .now() + .nanoseconds(call.group.timeout.totalNanoseconds)
        armDeadlineTimer(context: context)
        connection.send(forwardedRequest(exchange, peer: peerIP, forwardedFor: forwardedFor, allocator: context.channel.allocator))
    }

    /// Leaves a call the direct path took up to the router (which may try it again).
    /// Makes sure the connection's timer fires by the current call's deadline. One timer serves
    /// the connection's calls one after another: most answers begin long before their deadline,
    /// and when the timer fires for an earlier call it is set again for the current one, so calls
    /// in quick succession cost no timer each.
    private func armDeadlineTimer(context: ChannelHandlerContext) {
        guard let deadline = exchange?.deadline else { return }
        if deadlineTimer != nil, let armedFor, armedFor <= deadline { return }
        deadlineTimer?.cancel()
        armedFor = deadline
        deadlineTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            deadlineTimer = nil
            armedFor = nil
            guard let exchange, exchange.head == nil else { return }
            if exchange.deadline <= .now() {
                fail(exchange, UpstreamExchangeError.timedOut, context: context)
            } else {
                armDeadlineTimer(context: context)
            }
        }
    }

    private func handBack(_ exchange: Exchange, context: ChannelHandlerContext) {
        exchange.connection?.detach()
        self.exchange = nil
        route(exchange.call.request, context: context)
        resume(context: context)
    }

    private func peerIP(_ context: ChannelHandlerContext) -> String {
        if let peerIP { return peerIP }
        let found = ClientAddressResolver.text(of: context.channel.remoteAddress)
        peerIP = found
        return found
    }

    // MARK: The answer

    func upstreamRead(_ bytes: ByteBuffer) {
        guard let exchange, let context else { return }
        exchange.answer.receive(bytes)
        relay(exchange, context: context)
    }

    func upstreamReadComplete() {
        guard let exchange, exchange.unflushed, let context else { return }
        exchange.unflushed = false
        context.flush()
    }

    func upstreamEnded(_ error: (any Error)?) {
        guard let exchange, let context else { return }
        guard let head = exchange.head else {
            if exchange.reused, error == nil || error is IOError || error is ChannelError {
                // Most likely closed while parked: the service never saw the call.
                return handBack(exchange, context: context)
            }
            return fail(exchange, error ?? UpstreamExchangeError.closedBeforeResponse, context: context)
        }
        if head.body == .untilClose, error == nil {
            // The connection's end was the body's: the chunked answer to the client ends too.
            context.write(wrapOutboundOut(.byteBuffer(ByteBuffer(staticString: "0\r\n\r\n"))), promise: nil)
            context.flush()
            return finish(exchange, status: head.status, context: context)
        }
        fail(exchange, error ?? UpstreamExchangeError.closedMidResponse, context: context)
    }

    /// Passes on what has come of the answer.
    private func relay(_ exchange: Exchange, context: ChannelHandlerContext) {
        while self.exchange === exchange {
            let step: AnswerReader.Step?
            do {
                step = try exchange.answer.next()
            } catch {
                return fail(exchange, UpstreamExchangeError.malformed, context: context)
            }
            switch step {
            case nil, .needMore?:
                return
            case .head(let head)?:
                exchange.head = head
                if case .length(let length) = head.body, length > 0, length <= ReverseProxy.wholeAnswerLimit { continue }
                sendHead(exchange, context: context)
                if head.endsWithHead { return complete(exchange, context: context) }
            case .body(var bytes, let ends)?:
                if !exchange.headSent {
                    if exchange.whole == nil { exchange.whole = bytes } else { exchange.whole!.writeBuffer(&bytes) }
                    guard ends else { continue }
                    sendHead(exchange, context: context)
                    write(exchange.whole!, exchange, context: context)
                    return complete(exchange, context: context)
                }
                if exchange.head?.body == .untilClose {
                    var chunk = context.channel.allocator.buffer(capacity: bytes.readableBytes + 12)
                    chunk.writeString(String(bytes.readableBytes, radix: 16))
                    chunk.writeStaticString("\r\n")
                    chunk.writeImmutableBuffer(bytes)
                    chunk.writeStaticString("\r\n")
                    write(chunk, exchange, context: context)
                } else {
                    write(bytes, exchange, context: context)
                }
                if ends { return complete(exchange, context: context) }
            }
        }
    }

    private func sendHead(_ exchange: Exchange, context: ChannelHandlerContext) {
        exchange.headSent = true
        write(responseHead(exchange.head!, of: exchange, allocator: context.channel.allocator), exchange, context: context)
    }

    private func write(_ bytes: ByteBuffer, _ exchange: Exchange, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: nil)
        exchange.unflushed = true
        if !exchange.blocked, !context.channel.isWritable {
            exchange.blocked = true
            exchange.connection?.setReading(false)
            context.flush()
            exchange.unflushed = false
        }
    }

    /// The answer has all come: its connection goes back to the pool.
    private func complete(_ exchange: Exchange, context: ChannelHandlerContext) {
        let head = exchange.head!
        if let connection = exchange.connection {
            connection.detach()
            exchange.call.pool.releaseDirect(connection, reusable: head.keepAlive && !exchange.answer.hasLeftover)
        }
        context.flush()
        finish(exchange, status: head.status, context: context)
    }

    private func fail(_ exchange: Exchange, _ error: any Error, context: ChannelHandlerContext) {
        exchange.connection?.detach()
        exchange.connection?.close()
        if exchange.headSent, let head = exchange.head {
            // The client has the answer's head already: all it can be told is a connection cut short.
            context.close(promise: nil)
            return finish(exchange, status: head.status, context: context)
        }
        let logger = direct.logger(for: exchange.requestID)
        let problem = direct.proxy.failed(error, group: exchange.call.group, logger: logger)
        let answer = direct.problemAnswer(problem, path: exchange.call.path, head: exchange.call.request.head, requestID: exchange.requestID,
                                         allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(answer)), promise: nil)
        finish(exchange, status: problem.status.code, context: context)
    }

    private func finish(_ exchange: Exchange, status: Int, context: ChannelHandlerContext) {
        self.exchange = nil
        let logger = direct.logger.logLevel <= .info ? direct.logger(for: exchange.requestID) : direct.logger
        direct.requests.record(
            method: .get, path: exchange.call.path, route: exchange.call.group.route,
            status: HTTPResponse.Status(code: status), elapsed: exchange.start.duration(to: .now), logger: logger
        )
        resume(context: context)
    }

    /// After a direct call: handles what a pipelining client sent meanwhile, then reads on.
    private func resume(context: ChannelHandlerContext) {
        handlePending(context: context)
        if firedSinceReadComplete {
            // Parts passed on outside a read need the signal a read's end gives.
            firedSinceReadComplete = false
            context.fireChannelReadComplete()
        }
        if readHeld, !(exchange != nil && pending.readableBytes > 0) {
            readHeld = false
            context.read()
        }
        quiesceIfIdle(context: context)
    }

    // MARK: Heads

    /// The call as the service gets it: its path under the service's base path, the client's
    /// end-to-end fields as they came, and the gateway's forwarding fields and request id.
    private func forwardedRequest(_ exchange: Exchange, peer: String, forwardedFor: String?, allocator: ByteBufferAllocator) -> ByteBuffer {
        let call = exchange.call, head = call.request.head
        var request = allocator.buffer(capacity: head.bytes.readableBytes + 256)
        request.writeStaticString("GET ")
        request.writeString(call.pool.basePath)
        request.writeString(call.request.target)
        request.writeStaticString(" HTTP/1.1\r\n")
        request.writeField("Host", call.pool.authority)
        head.writeEndToEndFields(to: &request, dropping: [.xForwardedFor, .xForwardedProto, .xForwardedHost, .xRequestID])
        let forwarding = direct.proxy.forwarding(peer: peer, forwardedFor: forwardedFor, forwardedProto: head.combined(.xForwardedProto))
        request.writeField("X-Forwarded-For", forwarding.forwardedFor)
        request.writeField("X-Forwarded-Proto", forwarding.proto)
        if let host = head.combined(.host) { request.writeField("X-Forwarded-Host", host) }
        request.writeField("X-Request-Id", exchange.requestID)
        request.writeStaticString("\r\n")
        return request
    }

    /// The answer's head as the client gets it: the service's end-to-end fields as they came, then
    /// the gateway's own.
    private func responseHead(_ answer: AnswerReader.Head, of exchange: Exchange, allocator: ByteBufferAllocator) -> ByteBuffer {
        let head = answer.message
        var bytes = allocator.buffer(capacity: head.bytes.readableBytes + 256)
        bytes.writeStatusLine(answer.status, reason: head.string(answer.reason))
        head.writeEndToEndFields(to: &bytes, dropping: [.xRequestID, .date, .server])
        if let rateLimit = exchange.rateLimit {
            rateLimit.decision.forEachField(limit: rateLimit.limit, includeRetryAfter: false) { bytes.writeField($0.rawName, $1) }
        }
        switch answer.body {
        case .none: direct.stamp(&bytes, requestID: exchange.requestID)
        case .length(let length): direct.stamp(&bytes, requestID: exchange.requestID, framing: "Content-Length", String(length))
        case .chunked, .untilClose: direct.stamp(&bytes, requestID: exchange.requestID, framing: "Transfer-Encoding", "chunked")
        }
        return bytes
    }

}

/// Tells the connection's `DirectProxyHandler` when SwiftNIO's HTTP parser refused a request. It
/// sits behind the parser from the start (the router's own handling is set up only with the first
/// request it gets, so a malformed first request would otherwise go unanswered, the connection
/// left open).
final class ParserErrorHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let direct: DirectProxy
    /// A request has gone on to the router.
    private var routed = false

    init(_ direct: DirectProxy) {
        self.direct = direct
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        routed = true
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        defer { context.fireErrorCaught(error) }
        guard error is HTTPParserError else { return }
        let pipeline = context.pipeline.syncOperations
        if let front = try? pipeline.handler(type: DirectProxyHandler.self) {
            return front.refuseMalformed()
        }
        // Without the direct path: when no request has gone on to the router, nothing else is being
        // answered; the answer goes out in front of the response encoder, as bytes.
        if !routed, let encoder = try? pipeline.context(handlerType: HTTPResponseEncoder.self) {
            encoder.writeAndFlush(NIOAny(direct.malformedRequestAnswer(allocator: context.channel.allocator)), promise: nil)
        }
        context.close(promise: nil)
    }
}

/// Tells the connection's `DirectProxyHandler` when an answer of the router's has ended. It sits
/// behind Hummingbird's HTTP codec, which is set up with the first request routed on the
/// connection.
final class RoutedAnswerTracker: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    private var front: DirectProxyHandler?

    func handlerAdded(context: ChannelHandlerContext) {
        front = try? context.pipeline.syncOperations.handler(type: DirectProxyHandler.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        front = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { front?.routedAnswerEnded() }
        context.write(data, promise: promise)
    }
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
