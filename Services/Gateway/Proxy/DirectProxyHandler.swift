import Foundation
import HTTPTypes
import HummingbirdCore
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
    func call(for head: HTTPRequest) -> DirectCall? {
        guard head.method == .get, let target = head.path,
              head.headerFields[.contentLength] == nil, head.headerFields[.transferEncoding] == nil,
              !(cors.isEnabled && head.headerFields[.origin] != nil),
              !(head.headerFields[.connection]?.lowercased().contains("close") ?? false)
        else { return nil }
        let path = URI(target).path
        guard let group = checks.routes.group(for: path), let pool = proxy.pools[group.name],
              case .some(let user) = checks.acceptedWithoutWaiting(head.headerFields, for: group)
        else { return nil }
        return DirectCall(head: head, path: path, group: group, pool: pool, user: user)
    }

    /// The logger of one request: every line carries its id.
    func logger(for requestID: String) -> Logger {
        var logger = logger
        logger[metadataKey: "request_id"] = .string(requestID)
        return logger
    }
}

/// A request the direct path forwards.
struct DirectCall {
    let head: HTTPRequest
    let path: String
    let group: RouteGroup
    let pool: UpstreamPool
    let user: String?
}

/// Forwards the proxied GETs of one client connection to their service on the connection's own
/// event loop, with no task and no trip through the router: the gateway's most frequent call
/// costs the least.
///
/// It sits in the HTTP pipeline in front of Hummingbird's request handling. A GET that
/// `DirectProxy.call(for:)` accepts, arriving while nothing else is in progress on the
/// connection, is checked against its rate limit and written to a parked connection of the
/// upstream's pool on this loop; the answer is written back as it comes (read whole up to
/// `ReverseProxy.wholeAnswerLimit`, streamed with backpressure beyond). Everything else passes on
/// to the router, which does the same checks and forwarding in its async path: requests with a
/// body, a token that needs the key set fetched or is refused, a rate limit exceeded, no parked
/// connection, CORS, realtime, health and metrics. The client sees the same answers either way.
///
/// Failures answer as the router's path does: 504 when no answer began in the group's time, 502
/// when the exchange broke, a cut connection when it broke after the answer began. A parked
/// connection the service had closed leaves the call to the router, which tries it again over a
/// new connection.
final class DirectProxyHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case idle
        /// A direct call's head has been read, not yet its end.
        case reading(DirectCall)
        /// A direct call is with its service.
        case forwarding(Exchange)
    }

    /// One direct call in progress.
    private final class Exchange {
        let call: DirectCall
        let connection: UpstreamConnection
        let requestID: String
        let rateLimitHeaders: HTTPFields
        let start = ContinuousClock.now
        var answer: HTTPResponseHead?
        var whole: ByteBuffer?
        /// The answer's head has gone to the client; its body follows as it comes.
        var streaming = false
        /// Waiting for the service's next part.
        var waiting = false
        /// Waiting for the client to take what was written.
        var blocked = false

        init(call: DirectCall, connection: UpstreamConnection, requestID: String, rateLimitHeaders: HTTPFields) {
            self.call = call
            self.connection = connection
            self.requestID = requestID
            self.rateLimitHeaders = rateLimitHeaders
        }
    }

    private let direct: DirectProxy
    private var state = State.idle
    /// Requests passed on to the router whose answer has not ended: while there are any, later
    /// requests go to the router too, so answers leave in the order requests came.
    private var routed = 0
    /// Parts a pipelining client sent during a direct call, handled after it; reading pauses
    /// meanwhile.
    private var held = CircularBuffer<HTTPRequestPart>()
    private var readHeld = false
    private var replaying = false
    private var routedSinceReadComplete = false
    /// A graceful-shutdown notice that came during a direct call: Hummingbird's connection
    /// handler would close the connection at once, as it sees no request in progress.
    private var quiesceHeld: Any?

    init(_ direct: DirectProxy) {
        self.direct = direct
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receive(unwrapInboundIn(data), context: context)
    }

    private func receive(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch (state, part) {
        case (.idle, .head(let head)):
            if routed == 0, let call = direct.call(for: head) {
                state = .reading(call)
            } else {
                route(part, context: context)
            }
        case (.idle, _):
            route(part, context: context)
        case (.reading(let call), .end):
            start(call, context: context)
        case (.reading(let call), _):
            // A GET without framing headers has no body part; anything else is the router's.
            state = .idle
            route(.head(call.head), context: context)
            route(part, context: context)
        case (.forwarding, _):
            held.append(part)
        }
    }

    private func route(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        if case .head = part { routed += 1 }
        routedSinceReadComplete = true
        context.fireChannelRead(wrapInboundOut(part))
    }

    /// Hummingbird takes the parts read in one go when the read ends; parts passed on outside a
    /// read (held ones, or a call handed back after a stale connection) need that signal too.
    private func endRoutedRead(context: ChannelHandlerContext) {
        guard routedSinceReadComplete else { return }
        routedSinceReadComplete = false
        context.fireChannelReadComplete()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        routedSinceReadComplete = false
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routed = max(0, routed - 1) }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        if held.isEmpty {
            context.read()
        } else {
            readHeld = true
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !isIdle {
            quiesceHeld = event
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        abandon()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        abandon()
    }

    private var isIdle: Bool {
        if case .idle = state { true } else { false }
    }

    /// The client is gone: an answer in progress can only be cut off.
    private func abandon() {
        if case .forwarding(let exchange) = state {
            exchange.connection.close()
        }
        state = .idle
        held.removeAll()
    }

    // MARK: The exchange

    private func start(_ call: DirectCall, context: ChannelHandlerContext) {
        guard let connection = call.pool.takeParked(on: context.eventLoop) else {
            // The router's path opens a connection, which then stays parked for the next call.
            return handOver(call, context: context)
        }
        let (decision, limit) = direct.checks.takeRateLimit(
            for: call.group, user: call.user, peer: context.channel.remoteAddress, forwardedFor: call.head.headerFields[.xForwardedFor]
        )
        guard decision.allowed else {
            // The router answers the 429 (a refused take costs the bucket nothing).
            call.pool.restore(connection)
            return handOver(call, context: context)
        }
        direct.forwarded.increment()
        let requestID = RequestIDGenerator.id(for: call.head.headerFields)
        let exchange = Exchange(call: call, connection: connection, requestID: requestID, rateLimitHeaders: decision.headers(limit: limit, includeRetryAfter: false))
        state = .forwarding(exchange)
        let head = direct.proxy.makeHead(call.head, framing: .none, peer: context.channel.remoteAddress, requestID: requestID, pool: call.pool)
        connection.begin(deadline: .now() + .nanoseconds(call.group.timeout.totalNanoseconds))
        connection.channel.write(HTTPClientRequestPart.head(head), promise: nil)
        connection.channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        pump(exchange, context: context)
    }

    /// Passes a call the direct path took up on to the router, whole (its head and end).
    private func handOver(_ call: DirectCall, context: ChannelHandlerContext) {
        state = .idle
        route(.head(call.head), context: context)
        route(.end(nil), context: context)
    }

    private func isCurrent(_ exchange: Exchange) -> Bool {
        if case .forwarding(let current) = state { current === exchange } else { false }
    }

    /// Takes the service's answer part by part while it is at hand, then waits for more.
    private func pump(_ exchange: Exchange, context: ChannelHandlerContext) {
        while isCurrent(exchange), !exchange.waiting, !exchange.blocked {
            switch exchange.connection.nextOnLoop() {
            case .ready(let part):
                take(part, of: exchange, context: context)
            case .failed(let error):
                fail(exchange, error, context: context)
            case .later(let future):
                exchange.waiting = true
                if exchange.streaming { context.flush() }
                future.assumeIsolated().whenComplete { result in
                    exchange.waiting = false
                    guard self.isCurrent(exchange) else { return }
                    switch result {
                    case .success(let part): self.take(part, of: exchange, context: context)
                    case .failure(let error): self.fail(exchange, error, context: context)
                    }
                    self.pump(exchange, context: context)
                }
            }
        }
    }

    private func take(_ part: HTTPClientResponsePart, of exchange: Exchange, context: ChannelHandlerContext) {
        switch part {
        case .head(let answer):
            guard exchange.answer == nil else { return fail(exchange, UpstreamExchangeError.malformed, context: context) }
            exchange.answer = answer
            exchange.connection.answerBegan()
            let length = answer.headers.first(name: "content-length").flatMap(Int.init)
            if !ReverseProxy.readsWhole(answer, length: length, to: .GET) {
                exchange.streaming = true
                context.write(wrapOutboundOut(.head(responseHead(answer, of: exchange, contentLength: length))), promise: nil)
            }
        case .body(var chunk):
            guard exchange.answer != nil else { return fail(exchange, UpstreamExchangeError.malformed, context: context) }
            if exchange.streaming {
                context.write(wrapOutboundOut(.body(chunk)), promise: nil)
                if !context.channel.isWritable {
                    exchange.blocked = true
                    context.flush()
                }
            } else if exchange.whole == nil {
                exchange.whole = chunk
            } else {
                exchange.whole!.writeBuffer(&chunk)
            }
        case .end:
            guard let answer = exchange.answer else { return fail(exchange, UpstreamExchangeError.malformed, context: context) }
            exchange.call.pool.release(exchange.connection, reusable: answer.isKeepAlive)
            if !exchange.streaming {
                let body = exchange.whole ?? ByteBuffer()
                let bodiless = answer.status == .noContent || answer.status == .notModified
                context.write(wrapOutboundOut(.head(responseHead(answer, of: exchange, contentLength: bodiless ? nil : body.readableBytes))), promise: nil)
                if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(body)), promise: nil) }
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            finish(exchange, status: HTTPResponse.Status(code: Int(answer.status.code)), context: context)
        }
    }

    private func responseHead(_ answer: HTTPResponseHead, of exchange: Exchange, contentLength: Int?) -> HTTPResponse {
        var headers = ReverseProxy.responseHeaders(answer)
        headers.append(contentsOf: exchange.rateLimitHeaders)
        stamp(&headers, requestID: exchange.requestID, contentLength: contentLength)
        return HTTPResponse(status: .init(code: Int(answer.status.code), reasonPhrase: answer.status.reasonPhrase), headerFields: headers)
    }

    /// What every answer of the gateway carries.
    private func stamp(_ headers: inout HTTPFields, requestID: String, contentLength: Int?) {
        headers[.requestID] = requestID
        if let contentLength { headers[.contentLength] = String(contentLength) }
        headers[.date] = direct.dates.now()
        headers[.server] = direct.serverName
    }

    private func fail(_ exchange: Exchange, _ error: any Error, context: ChannelHandlerContext) {
        exchange.connection.close()
        if exchange.streaming {
            // The client has the answer's head already: all it can be told is a connection cut short.
            finish(exchange, status: HTTPResponse.Status(code: Int(exchange.answer!.status.code)), context: context)
            context.close(promise: nil)
            return
        }
        if exchange.answer == nil, (error as? UpstreamExchangeError) == .closedBeforeResponse {
            // A parked connection the service had closed: it never saw the call, which the router's
            // path makes again.
            handOver(exchange.call, context: context)
            replayHeld(context: context)  // which also ends the read the call was handed over in
            return
        }
        let logger = direct.logger(for: exchange.requestID)
        let problem = direct.proxy.failed(error, group: exchange.call.group, logger: logger)
        let (problemHeaders, body) = problem.document(path: exchange.call.path, requestID: exchange.requestID)
        var headers = problemHeaders
        stamp(&headers, requestID: exchange.requestID, contentLength: body.readableBytes)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: problem.status, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        finish(exchange, status: problem.status, context: context)
    }

    private func finish(_ exchange: Exchange, status: HTTPResponse.Status, context: ChannelHandlerContext) {
        state = .idle
        let logger = direct.logger.logLevel <= .info ? direct.logger(for: exchange.requestID) : direct.logger
        direct.requests.record(
            method: .get, path: exchange.call.path, route: EdgeChecks.route(exchange.call.group),
            status: status, elapsed: exchange.start.duration(to: .now), logger: logger
        )
        replayHeld(context: context)
    }

    /// Handles what a pipelining client sent meanwhile, then reads on.
    private func replayHeld(context: ChannelHandlerContext) {
        guard !replaying else { return }
        replaying = true
        defer { replaying = false }
        while !held.isEmpty, !isForwarding {
            receive(held.removeFirst(), context: context)
        }
        endRoutedRead(context: context)
        if held.isEmpty, readHeld {
            readHeld = false
            context.read()
        }
        if isIdle, let event = quiesceHeld {
            quiesceHeld = nil
            context.fireUserInboundEventTriggered(event)
        }
    }

    private var isForwarding: Bool {
        if case .forwarding = state { true } else { false }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, case .forwarding(let exchange) = state, exchange.blocked {
            exchange.blocked = false
            pump(exchange, context: context)
        }
        context.fireChannelWritabilityChanged()
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
