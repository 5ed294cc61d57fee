import Foundation
import HTTPEdge
import HTTPTypes
import HummingbirdCore
import Identity
import KeySetClient
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import ServiceKit

/// The gateway's edge and reverse proxy for one client connection: every request to a route group
/// is checked and forwarded here, as bytes, on the connection's own event loop — no HTTP parser
/// of SwiftNIO's, no header objects, no task, no trip through the router.
///
/// It is the first handler of the connection's pipeline, in front of SwiftNIO's HTTP parser, and
/// reads each request's head itself (`MessageHead`, a strict reading of RFC 9112). A request to a
/// route group gets, in order: a CORS preflight's answer, the body limit (a declared length over
/// it is a 413 at once, a chunked body's data is counted as it passes), the token check (a key
/// set fetch runs in a task and the call carries on when it ends), the rate limit; then it is
/// written to a pooled `UpstreamConnection` of the same loop with the forwarding headers set and
/// hop-by-hop ones dropped, its body streaming after it as it comes (reading from the client
/// pauses while the service's socket is full; `Expect: 100-continue` is answered once the call is
/// admitted). The answer's head is rewritten the same way and its body passes on as it comes,
/// pausing the service while the client is slow; HTTP/1.0 clients get it without chunks.
///
/// Every other request (realtime, the console, health, metrics, unknown paths) passes on, as its
/// bytes, to SwiftNIO's parser and the router. Answers leave in the order requests came: a
/// proxied request that follows a routed one waits until the router's answer has ended
/// (`RoutedAnswerTracker` tells), and what follows a proxied one waits in `pending`. A head
/// outside the grammar is a 400 and ends the connection; an upgrade, or the router's last request,
/// leaves the rest of the connection to the router.
///
/// Failures: 503 when no connection to the service can be made (tried twice), 504 when no answer
/// began in the group's time, 502 when the exchange broke, a cut connection when it broke after
/// the answer began. A call without a body and with an idempotent method, met by a reused
/// connection the service had closed, is made again over a new one.
final class EdgeProxyHandler: ChannelDuplexHandler, RemovableChannelHandler, UpstreamReceiver {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private enum Mode {
        /// At the start of a request: heads are read here.
        case reading
        /// Passing on the rest of a routed request's body, by length or by chunks.
        case passingBody(remaining: Int)
        case passingChunks(ChunkedBodyScanner)
        /// Reading and dropping the rest of the body of a request answered without it.
        case discarding(remaining: Int)
        /// Everything goes to SwiftNIO's parser from now on.
        case passthrough
        /// The last answer is out and the connection ends: what the client still sends is dropped.
        case closing
    }

    /// What is left to send of a proxied request's body.
    private enum BodyLeft {
        case none
        case length(Int)
        /// Chunks, and how many bytes of data have passed (for the body limit).
        case chunked(ChunkedBodyScanner, received: Int)
    }

    /// One proxied request in progress. A class: its steps each read and change it.
    private final class Exchange {
        let request: ClientRequest
        let group: RouteGroup
        let requestID: String
        let start = ContinuousClock.now
        var pool: UpstreamPool?
        var connection: UpstreamConnection?
        /// The connection carried calls before (so one that closes before answering most likely
        /// closed while idle, and never saw the call).
        var reused = false
        var attempts = 0
        /// The rate limit's answer to the call, for the `RateLimit-*` fields of the answer.
        var rateLimit: (decision: RateLimitDecision, limit: RateLimit)?
        /// The `Origin` of a browser's call while CORS is on.
        var origin: String?
        /// The client's `X-Forwarded-For`, read for the rate limit and again for the call.
        lazy var forwardedFor = request.head.combined(.xForwardedFor)
        var bodyLeft: BodyLeft
        /// `100 Continue` went to the client.
        var continued = false
        var answer: AnswerReader
        var head: AnswerReader.Head?
        /// A small answer's body, kept until it has all come: until then a break-off can still be
        /// answered with a 502.
        var whole: ByteBuffer?
        /// The answer's head has gone to the client.
        var headSent = false
        /// Whether the client connection ends after this answer (decided when its head is written).
        var closes = false
        /// For an HTTP/1.0 client, a chunked answer's data is passed on without its framing.
        var unchunking: ChunkedBodyScanner?
        /// When the answer must have begun.
        var deadline = NIODeadline.distantFuture
        /// Bytes written to the client since the last flush.
        var unflushed = false
        /// The upstream is paused until the client takes what was written.
        var blocked = false

        init(request: ClientRequest, group: RouteGroup, requestID: String) {
            self.request = request
            self.group = group
            self.requestID = requestID
            self.answer = AnswerReader(toHEAD: request.method == .head)
            switch request.body {
            case .none: bodyLeft = .none
            case .length(let length): bodyLeft = length > 0 ? .length(length) : .none
            case .chunked: bodyLeft = .chunked(ChunkedBodyScanner(), received: 0)
            }
        }

        var bodyOpen: Bool {
            if case .none = bodyLeft { false } else { true }
        }
    }

    private let proxy: EdgeProxy
    /// Fulfilled when bytes first go on to the handlers behind (`true`) or the connection ends
    /// before any did (`false`): `FrontedChannel` lets the router handle the connection then.
    private var passedOnPromise: EventLoopPromise<Bool>?
    private var context: ChannelHandlerContext?
    private var mode = Mode.reading
    /// Bytes read and not yet handled: a head not yet whole, a body not yet sent on, or requests
    /// pipelined behind a proxied call (reading pauses meanwhile).
    private var pending = ByteBuffer()
    private var exchange: Exchange?
    /// A proxied request read while a routed answer was outstanding: it waits for that to end.
    private var waiting: (request: ClientRequest, group: RouteGroup)?
    /// Requests passed to the router whose answers have not ended.
    private var routed = 0
    /// Bytes have gone on to the handlers behind this one (a routed request, an upgrade to a
    /// WebSocket): they answer a graceful-shutdown notice themselves.
    private var passedOn = false
    private var firedSinceReadComplete = false
    private var readHeld = false
    private var quiesceRequested = false
    /// `pending` is being worked through (what ends a call meanwhile leaves the rest to it).
    private var handling = false
    /// The timer for the deadlines of this connection's calls, and the instant it is set for.
    private var deadlineTimer: Scheduled<Void>?
    private var armedFor: NIODeadline?
    /// The client's address as text, as sent upstream and keyed for rate limits (made once: it
    /// costs a formatting of the address).
    private var peerIP: String?

    init(_ proxy: EdgeProxy, passedOn: EventLoopPromise<Bool>? = nil) {
        self.proxy = proxy
        self.passedOnPromise = passedOn
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
        switch mode {
        case .closing:
            return
        case .passthrough where pending.readableBytes == 0 && exchange == nil:
            fire(bytes, context: context)
            return
        default:
            break
        }
        if pending.readableBytes == 0 {
            pending = bytes
        } else {
            var bytes = bytes
            pending.writeBuffer(&bytes)
        }
        if let exchange {
            if exchange.connection != nil, exchange.bodyOpen { sendBody(exchange, context: context) }
        } else {
            handlePending(context: context)
        }
    }

    /// Works through what has been read, up to a proxied call's start (what follows waits for
    /// its end), then reads on if it can.
    private func handlePending(context: ChannelHandlerContext) {
        guard !handling else { return }
        handling = true
        workThroughPending(context: context)
        handling = false
        resumeReading(context: context)
        quiesceIfIdle(context: context)
    }

    private func workThroughPending(context: ChannelHandlerContext) {
        while exchange == nil {
            switch mode {
            case .closing:
                pending.clear()
                return
            case .passthrough:
                if pending.readableBytes > 0 {
                    fire(pending, context: context)
                    pending.clear()
                }
                return
            case .passingBody(let remaining):
                guard pending.readableBytes > 0 else { return }
                let count = min(remaining, pending.readableBytes)
                fire(pending.readSlice(length: count)!, context: context)
                mode = count == remaining ? .reading : .passingBody(remaining: remaining - count)
            case .passingChunks(var scanner):
                guard pending.readableBytes > 0 else { return }
                guard let scan = try? scanner.scan(pending) else {
                    // The router's parser answers what is wrong with it.
                    mode = .passthrough
                    continue
                }
                fire(pending.readSlice(length: scan.count)!, context: context)
                mode = scan.ends ? .reading : .passingChunks(scanner)
            case .discarding(let remaining):
                guard pending.readableBytes > 0 else { return }
                let count = min(remaining, pending.readableBytes)
                pending.moveReaderIndex(forwardBy: count)
                mode = count == remaining ? .reading : .discarding(remaining: remaining - count)
            case .reading:
                if let (request, group) = waiting {
                    guard routed == 0 else { return }
                    waiting = nil
                    begin(request, group, context: context)
                    continue
                }
                guard !quiesceRequested, pending.readableBytes > 0 else { return }
                let request: ClientRequest
                switch MessageHead.take(from: &pending) {
                case .incomplete:
                    return
                case .notPlain:
                    return refuseUnreadable(nil, tooLarge: false, context: context)
                case .tooLarge:
                    return refuseUnreadable(nil, tooLarge: true, context: context)
                case .head(let head):
                    guard let read = ClientRequest(head) else { return refuseUnreadable(head, tooLarge: false, context: context) }
                    request = read
                }
                guard let group = proxy.checks.routes.group(for: request.path) else {
                    route(request, context: context)
                    continue
                }
                guard routed == 0 else {
                    waiting = (request, group)
                    return
                }
                begin(request, group, context: context)
            }
        }
    }

    /// Passes a request for the gateway's own routes on to SwiftNIO's parser and the router, and
    /// then its body.
    private func route(_ request: ClientRequest, context: ChannelHandlerContext) {
        routed += 1
        fire(request.head.bytes, context: context)
        if request.upgrades || request.closes {
            mode = .passthrough
            return
        }
        switch request.body {
        case .none, .length(0): break
        case .length(let length): mode = .passingBody(remaining: length)
        case .chunked: mode = .passingChunks(ChunkedBodyScanner())
        }
    }

    /// Bytes that are not a request the gateway reads: a 400 (431 for a head too long), and the
    /// connection ends, as what follows cannot be trusted to start a request. Behind a routed
    /// answer, the router's parser is left to refuse them in turn.
    private func refuseUnreadable(_ head: MessageHead?, tooLarge: Bool, context: ChannelHandlerContext) {
        if routed > 0 {
            if let head { fire(head.bytes, context: context) }
            mode = .passthrough
            return workThroughPending(context: context)
        }
        context.writeAndFlush(
            wrapOutboundOut(.byteBuffer(proxy.malformedRequestAnswer(tooLarge: tooLarge, allocator: context.channel.allocator))),
            promise: nil
        )
        mode = .closing
        pending.clear()
        context.close(promise: nil)
    }

    private func fire(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        firedSinceReadComplete = true
        if !passedOn {
            passedOn = true
            passedOnPromise?.succeed(true)
            passedOnPromise = nil
        }
        context.fireChannelRead(wrapInboundOut(bytes))
    }

    /// The handlers behind hear of a read's end once bytes have gone on to them: on a connection
    /// only proxied calls have used they have nothing to act on (their idle tracking counts
    /// reads, which they do not see either), and the event would pass through each on every read.
    func channelReadComplete(context: ChannelHandlerContext) {
        firedSinceReadComplete = false
        if passedOn { context.fireChannelReadComplete() }
    }

    func read(context: ChannelHandlerContext) {
        if wantsInput {
            context.read()
        } else {
            readHeld = true
        }
    }

    /// Whether more of the client's bytes are welcome: not while read ones wait (a body for a
    /// service whose socket is full or not connected yet, requests pipelined behind a call).
    private var wantsInput: Bool {
        if case .closing = mode { return true }
        return pending.readableBytes == 0 || (exchange == nil && waiting == nil)
    }

    private func resumeReading(context: ChannelHandlerContext) {
        guard readHeld, wantsInput else { return }
        readHeld = false
        context.read()
    }

    /// A routed request's answer has ended: a proxied request waiting for it can begin (after the
    /// answer's last bytes, which are still on their way through the pipeline).
    fileprivate func routedAnswerEnded() {
        routed = max(0, routed - 1)
        guard routed == 0, waiting != nil, let context else { return }
        context.eventLoop.assumeIsolated().execute { [self] in
            guard let context = self.context else { return }
            resume(context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        quiesceRequested = true
        quiesceIfIdle(context: context)
    }

    /// SwiftNIO's parser refused what the client sent the router: a 400 problem when nothing else
    /// is being answered on the connection, which then closes.
    fileprivate func refuseMalformed() {
        guard let context else { return }
        mode = .closing
        pending.clear()
        if exchange == nil, routed == 0 {
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(proxy.malformedRequestAnswer(allocator: context.channel.allocator))), promise: nil)
        }
        context.close(promise: nil)
    }

    /// After a graceful-shutdown notice, once no proxied call is in progress: the handlers behind
    /// this one finish what they have and close the connection, or, when only proxied calls
    /// used it, the connection closes now.
    private func quiesceIfIdle(context: ChannelHandlerContext) {
        guard quiesceRequested, exchange == nil, !handling else { return }
        quiesceRequested = false
        waiting = nil
        if passedOn {
            if case .reading = mode { mode = .passthrough }
            handlePending(context: context)
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        } else {
            mode = .closing
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        abandon()
        context.fireChannelInactive()
    }

    /// The client is gone: a call in progress can only be cut off, and if nothing went on to the
    /// router, it never will.
    private func abandon() {
        passedOnPromise?.succeed(false)
        passedOnPromise = nil
        if let exchange {
            exchange.connection?.detach()
            exchange.connection?.close()
            self.exchange = nil
        }
        waiting = nil
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

    // MARK: Admission

    private func begin(_ request: ClientRequest, _ group: RouteGroup, context: ChannelHandlerContext) {
        let exchange = Exchange(request: request, group: group, requestID: RequestIDGenerator.id(requested: request.head.combined(.xRequestID)))
        self.exchange = exchange
        // Read only where it can matter: a preflight (answered CORS on or off), or CORS on.
        let origin = request.method == .options || proxy.cors.isEnabled ? request.head.combined(.origin) : nil
        if let origin,
            CORSPolicy.isPreflight(method: request.method, origin: origin, requestMethod: request.head.combined(.accessControlRequestMethod))
        {
            switch proxy.cors.preflight(origin: origin, requestHeaders: request.head.combined(.accessControlRequestHeaders)) {
            case .success(let fields): return answerPreflight(exchange, fields: fields, context: context)
            case .failure(let problem): return refuse(exchange, problem, context: context)
            }
        }
        if proxy.cors.isEnabled { exchange.origin = origin }
        if case .length(let length) = request.body, length > group.maxBodySize {
            return refuse(exchange, .bodyTooLarge(limit: group.maxBodySize), context: context)
        }
        let admission = proxy.checks.admit(
            authorization: request.head.combined(.authorization),
            apiKey: request.head.combined(.apiKey),
            method: request.method,
            path: request.path,
            for: group
        )
        admit(exchange, admission, context: context)
    }

    private func admit(_ exchange: Exchange, _ admission: EdgeChecks.Admission, context: ChannelHandlerContext) {
        switch admission {
        case .refused(let problem):
            refuse(exchange, problem, context: context)
        case .user(let user):
            admitted(exchange, user: user, context: context)
        case .needsKeys(let token):
            // The key set is fetched in a task; the call carries on on this loop when it ends.
            let keys = proxy.checks.keys
            context.eventLoop.makeFutureWithTask { () async -> EdgeChecks.Admission in
                do throws(AccessTokenError) {
                    return .user(try await keys.verify(token).subject)
                } catch {
                    return .refused(TokenProblem.refused(error))
                }
            }.assumeIsolated().whenSuccess { [self] admission in
                guard self.exchange === exchange, let context = self.context else { return }
                admit(exchange, admission, context: context)
            }
        }
    }

    private func admitted(_ exchange: Exchange, user: String?, context: ChannelHandlerContext) {
        let request = exchange.request
        let group = exchange.group
        let (decision, limit) = proxy.checks.takeRateLimit(for: group, user: user, peerIP: peerIP(context), forwardedFor: exchange.forwardedFor)
        guard decision.allowed else {
            return refuse(exchange, EdgeChecks.rateLimited(decision, limit: limit, group: group), context: context)
        }
        exchange.rateLimit = (decision, limit)
        guard let pool = proxy.pools[group.name] else {
            return refuse(exchange, GatewayProblem.notConfigured(group.name), context: context)
        }
        exchange.pool = pool
        if request.expectsContinue, exchange.bodyOpen {
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer(staticString: "HTTP/1.1 100 Continue\r\n\r\n"))), promise: nil)
            exchange.continued = true
        }
        exchange.deadline = .now() + .nanoseconds(group.timeout.totalNanoseconds)
        armDeadlineTimer(context: context)
        connect(exchange, context: context)
    }

    // MARK: The call

    /// Takes a parked connection of this loop (unless `reuse` is off) or makes one. A connection
    /// that cannot be made is tried once more (nothing was sent), then answered 503.
    private func connect(_ exchange: Exchange, reuse: Bool = true, context: ChannelHandlerContext) {
        let pool = exchange.pool!
        exchange.attempts += 1
        if reuse, let connection = pool.takeParked(on: context.eventLoop) {
            return send(exchange, over: connection, reused: true, context: context)
        }
        let connecting: EventLoopFuture<UpstreamConnection>
        do {
            connecting = try pool.connect(on: context.eventLoop)
        } catch {
            return fail(exchange, error, context: context)  // too many connections open: 503
        }
        connecting.assumeIsolated().whenComplete { [self] result in
            guard self.exchange === exchange, let context = self.context else {
                if case .success(let connection) = result { pool.release(connection, reusable: true) }
                return
            }
            switch result {
            case .success(let connection):
                send(exchange, over: connection, reused: false, context: context)
            case .failure where exchange.attempts < 2:
                connect(exchange, reuse: false, context: context)
            case .failure(let error):
                fail(exchange, error, context: context)
            }
        }
    }

    private func send(_ exchange: Exchange, over connection: UpstreamConnection, reused: Bool, context: ChannelHandlerContext) {
        exchange.connection = connection
        exchange.reused = reused
        connection.attach(self)
        connection.write(forwardedHead(exchange, context: context))
        sendBody(exchange, context: context)
    }

    /// Sends on what has come of the request's body, as far as the service's socket takes it
    /// (then `upstreamWritabilityChanged` resumes), and flushes.
    private func sendBody(_ exchange: Exchange, context: ChannelHandlerContext) {
        guard let connection = exchange.connection else { return }
        sending: while pending.readableBytes > 0, connection.isWritable {
            switch exchange.bodyLeft {
            case .none:
                break sending
            case .length(let remaining):
                let count = min(remaining, pending.readableBytes)
                connection.write(pending.readSlice(length: count)!)
                exchange.bodyLeft = count == remaining ? .none : .length(remaining - count)
            case .chunked(var scanner, let received):
                let scan: ChunkedBodyScanner.Scan
                do {
                    scan = try scanner.scan(pending)
                } catch {
                    return giveUp(exchange, context: context) {
                        Problem(status: .badRequest, type: "malformed-request", detail: "The request's chunked body is malformed.")
                    }
                }
                guard received + scan.data <= exchange.group.maxBodySize else {
                    return giveUp(exchange, context: context) { .bodyTooLarge(limit: exchange.group.maxBodySize) }
                }
                connection.write(pending.readSlice(length: scan.count)!)
                exchange.bodyLeft = scan.ends ? .none : .chunked(scanner, received: received + scan.data)
            }
        }
        connection.flush()
        resumeReading(context: context)
    }

    func upstreamWritabilityChanged() {
        guard let exchange, exchange.bodyOpen, exchange.connection?.isWritable == true, let context else { return }
        sendBody(exchange, context: context)
    }

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
            guard let exchange, exchange.head == nil, exchange.deadline != .distantFuture else { return }
            if exchange.deadline <= .now() {
                fail(exchange, UpstreamExchangeError.timedOut, context: context)
            } else {
                armDeadlineTimer(context: context)
            }
        }
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
            if exchange.reused, exchange.request.isRetryable, error == nil || error is IOError || error is ChannelError {
                // Most likely closed while parked: the service never saw the call. Once more,
                // over a new connection.
                exchange.connection = nil
                exchange.answer = AnswerReader(toHEAD: exchange.request.method == .head)
                return connect(exchange, reuse: false, context: context)
            }
            return fail(exchange, error ?? UpstreamExchangeError.closedBeforeResponse, context: context)
        }
        if head.body == .untilClose, error == nil {
            // The connection's end was the body's: the answer to the client ends too.
            exchange.connection = nil
            if !exchange.request.isHTTP10 {
                context.write(wrapOutboundOut(.byteBuffer(ByteBuffer(staticString: "0\r\n\r\n"))), promise: nil)
            }
            context.flush()
            return end(exchange, status: head.status, context: context)
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
                if case .length(let length) = head.body, length > 0, length <= EdgeProxy.wholeAnswerLimit { continue }
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
                if exchange.unchunking != nil {
                    writeUnchunked(bytes, exchange, context: context)
                } else if exchange.head?.body == .untilClose, !exchange.request.isHTTP10 {
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

    /// The data of a chunked answer's bytes, for an HTTP/1.0 client.
    private func writeUnchunked(_ bytes: ByteBuffer, _ exchange: Exchange, context: ChannelHandlerContext) {
        var ranges: [Range<Int>] = []
        do {
            _ = try exchange.unchunking!.scan(bytes) { ranges.append($0) }
        } catch {
            return fail(exchange, UpstreamExchangeError.malformed, context: context)
        }
        for range in ranges {
            write(bytes.getSlice(at: bytes.readerIndex + range.lowerBound, length: range.count)!, exchange, context: context)
        }
    }

    private func sendHead(_ exchange: Exchange, context: ChannelHandlerContext) {
        exchange.headSent = true
        write(answerHead(exchange.head!, of: exchange, allocator: context.channel.allocator), exchange, context: context)
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

    /// The answer has all come: its connection goes back to the pool when the request went whole.
    private func complete(_ exchange: Exchange, context: ChannelHandlerContext) {
        let head = exchange.head!
        if let connection = exchange.connection {
            connection.detach()
            exchange.pool?.release(connection, reusable: head.keepAlive && !exchange.answer.hasLeftover && !exchange.bodyOpen)
            exchange.connection = nil
        }
        context.flush()
        end(exchange, status: head.status, context: context)
    }

    private func fail(_ exchange: Exchange, _ error: any Error, context: ChannelHandlerContext) {
        giveUp(exchange, context: context) { proxy.failed(error, group: exchange.group, logger: proxy.logger(for: exchange.requestID)) }
    }

    /// Ends a call that cannot go on (the service failed it, or the request's body is malformed
    /// or past the limit): the service's connection is closed, and the client answered with
    /// `problem` — or, once it has the answer's head, with a connection cut short.
    private func giveUp(_ exchange: Exchange, context: ChannelHandlerContext, problem: () -> Problem) {
        exchange.connection?.detach()
        exchange.connection?.close()
        exchange.connection = nil
        if exchange.headSent {
            exchange.closes = true
            return end(exchange, status: exchange.head?.status ?? 502, context: context)
        }
        refuse(exchange, problem(), context: context)
    }

    // MARK: The gateway's own answers

    /// Answers a proxied request with `problem`, the service never having (or no longer) seen it.
    private func refuse(_ exchange: Exchange, _ problem: Problem, context: ChannelHandlerContext) {
        exchange.closes = closesAfterAnswer(exchange)
        let answer = proxy.problemAnswer(
            problem,
            path: exchange.request.path,
            head: exchange.request.head,
            requestID: exchange.requestID,
            closing: exchange.closes,
            allocator: context.channel.allocator
        ) { bytes in self.writeCORSFields(exchange, to: &bytes) }
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(answer)), promise: nil)
        end(exchange, status: problem.status.code, context: context)
    }

    private func answerPreflight(_ exchange: Exchange, fields: HTTPFields, context: ChannelHandlerContext) {
        exchange.closes = closesAfterAnswer(exchange)
        var answer = context.channel.allocator.buffer(capacity: 512)
        answer.writeStatusLine(204, reason: "No Content")
        for field in fields { answer.writeField(field.name.rawName, field.value) }
        if exchange.closes { answer.writeField("Connection", "close") }
        proxy.stamp(&answer, requestID: exchange.requestID)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(answer)), promise: nil)
        end(exchange, status: 204, context: context)
    }

    /// Whether the connection must end after the answer to `exchange`: the client said so, the
    /// gateway is stopping, or the rest of the request's body cannot be read past (chunked, too
    /// large to drop, or held back by a client waiting for a `100 Continue` it never got).
    private func closesAfterAnswer(_ exchange: Exchange) -> Bool {
        if exchange.request.closes || quiesceRequested { return true }
        switch exchange.bodyLeft {
        case .none: return false
        case .length(let remaining): return remaining > EdgeProxy.discardLimit || (exchange.request.expectsContinue && !exchange.continued)
        case .chunked: return true
        }
    }

    /// Records the call, and goes on with the connection: to the next request (past what is left
    /// of this one's body), or to its end.
    private func end(_ exchange: Exchange, status: Int, context: ChannelHandlerContext) {
        self.exchange = nil
        let logger = proxy.logger.logLevel <= .info ? proxy.logger(for: exchange.requestID) : proxy.logger
        proxy.requests.record(
            method: exchange.request.method,
            path: exchange.request.path,
            route: exchange.group.route,
            status: HTTPResponse.Status(code: status),
            elapsed: exchange.start.duration(to: .now),
            logger: logger
        )
        guard !exchange.closes else { return closeAfterAnswer(lingering: exchange.bodyOpen, context: context) }
        if case .length(let remaining) = exchange.bodyLeft { mode = .discarding(remaining: remaining) }
        resume(context: context)
    }

    /// Ends the connection once the answer is out. While the client may still be sending a body,
    /// only the gateway's side closes first, and what comes is read and dropped for a while, so
    /// the client reads the answer rather than a reset.
    private func closeAfterAnswer(lingering: Bool, context: ChannelHandlerContext) {
        mode = .closing
        pending.clear()
        waiting = nil
        guard lingering else { return context.close(promise: nil) }
        context.close(mode: .output, promise: nil)
        context.eventLoop.assumeIsolated().scheduleTask(in: EdgeProxy.lingerTime) {
            context.close(promise: nil)
        }
        resumeReading(context: context)
    }

    /// After a call: handles what a pipelining client sent meanwhile, then reads on.
    private func resume(context: ChannelHandlerContext) {
        handlePending(context: context)
        if firedSinceReadComplete {
            // Parts passed on outside a read need the signal a read's end gives.
            firedSinceReadComplete = false
            context.fireChannelReadComplete()
        }
    }

    // MARK: Heads

    /// The call as the service gets it: its path under the service's base path, the client's
    /// end-to-end fields as they came, and the gateway's forwarding fields, request id and framing.
    private func forwardedHead(_ exchange: Exchange, context: ChannelHandlerContext) -> ByteBuffer {
        let request = exchange.request
        let head = request.head
        let pool = exchange.pool!
        var bytes = context.channel.allocator.buffer(capacity: head.bytes.readableBytes + 256)
        bytes.writeString(request.method.rawValue)
        bytes.writeStaticString(" ")
        bytes.writeString(pool.basePath)
        bytes.writeString(request.target)
        bytes.writeStaticString(" HTTP/1.1\r\n")
        bytes.writeField("Host", pool.authority)
        head.writeEndToEndFields(to: &bytes, dropping: [.xForwardedFor, .xForwardedProto, .xForwardedHost, .xRequestID, .expect])
        let forwarding = proxy.forwarding(peer: peerIP(context), forwardedFor: exchange.forwardedFor, forwardedProto: head.combined(.xForwardedProto))
        bytes.writeField("X-Forwarded-For", forwarding.forwardedFor)
        bytes.writeField("X-Forwarded-Proto", forwarding.proto)
        if let host = head.combined(.host) { bytes.writeField("X-Forwarded-Host", host) }
        bytes.writeField("X-Request-Id", exchange.requestID)
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
    /// the gateway's own (rate limit, CORS, request id, framing for the client's HTTP version).
    private func answerHead(_ answer: AnswerReader.Head, of exchange: Exchange, allocator: ByteBufferAllocator) -> ByteBuffer {
        let head = answer.message
        let request = exchange.request
        var bytes = allocator.buffer(capacity: head.bytes.readableBytes + 256)
        bytes.writeStatusLine(answer.status, reason: head.string(answer.reason))
        head.writeEndToEndFields(to: &bytes, dropping: [.xRequestID, .date, .server])
        if let rateLimit = exchange.rateLimit {
            rateLimit.decision.forEachField(limit: rateLimit.limit, includeRetryAfter: false) { bytes.writeField($0.rawName, $1) }
        }
        writeCORSFields(exchange, to: &bytes)
        var framing: (name: String, value: String)?
        var delimitedByClose = false
        switch request.method == .head ? answer.declared : answer.body {
        case .none: break
        case .length(let length): framing = ("Content-Length", String(length))
        case .chunked where request.method == .head || !request.isHTTP10: framing = ("Transfer-Encoding", "chunked")
        case .untilClose where request.method != .head && !request.isHTTP10: framing = ("Transfer-Encoding", "chunked")
        case .chunked, .untilClose:
            // HTTP/1.0 has no chunks: the body runs to the connection's end.
            delimitedByClose = request.method != .head
            if answer.body == .chunked, delimitedByClose { exchange.unchunking = ChunkedBodyScanner() }
        }
        exchange.closes = delimitedByClose || closesAfterAnswer(exchange)
        if exchange.closes {
            bytes.writeField("Connection", "close")
        } else if request.isHTTP10 {
            bytes.writeField("Connection", "keep-alive")
        }
        if let framing {
            proxy.stamp(&bytes, requestID: exchange.requestID, framing: framing.name, framing.value)
        } else {
            proxy.stamp(&bytes, requestID: exchange.requestID)
        }
        return bytes
    }

    private func writeCORSFields(_ exchange: Exchange, to bytes: inout ByteBuffer) {
        guard let origin = exchange.origin else { return }
        proxy.cors.answerFields(origin: origin) { bytes.writeField($0.rawName, $1) }
    }
}

/// Tells the connection's `EdgeProxyHandler` when SwiftNIO's HTTP parser refused a request passed
/// to the router. It sits behind the parser from the start (the router's own handling is set up
/// only with the first request it gets, so a malformed first request would otherwise go
/// unanswered, the connection left open).
final class ParserErrorHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        defer { context.fireErrorCaught(error) }
        guard error is HTTPParserError else { return }
        if let front = try? context.pipeline.syncOperations.handler(type: EdgeProxyHandler.self) {
            front.refuseMalformed()
        } else {
            context.close(promise: nil)
        }
    }
}

/// Tells the connection's `EdgeProxyHandler` when an answer of the router's has ended. It sits
/// behind Hummingbird's HTTP codec, which is set up with the first request routed on the
/// connection.
final class RoutedAnswerTracker: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    private var front: EdgeProxyHandler?

    func handlerAdded(context: ChannelHandlerContext) {
        front = try? context.pipeline.syncOperations.handler(type: EdgeProxyHandler.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        front = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let ends = if case .end = unwrapOutboundIn(data) { true } else { false }
        context.write(data, promise: promise)
        if ends { front?.routedAnswerEnded() }
    }
}
