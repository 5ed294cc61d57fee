import HTTPEdge
import HTTPTypes
import HummingbirdCore
import Identity
import KeySetClient
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import ServiceKit

/// The gateway's edge for one client connection: the first handler of its pipeline, in front of
/// SwiftNIO's HTTP parser. What the connection does is decided by its `EdgeStateMachine` (every
/// request to a route group checked and forwarded to its service as bytes, every other one passed
/// on to the router); this handler only feeds it the connection's events and performs the actions
/// it gives back: the I/O on the client's and the service's sockets, the edge checks
/// (`EdgeChecks`: CORS preflights, tokens, with a key-set fetch in a task when needed, rate
/// limits), the connection pools, the deadline timer, and the answers' rendering (`EdgeProxy`).
final class EdgeProxyHandler: ChannelDuplexHandler, RemovableChannelHandler, UpstreamReceiver {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let proxy: EdgeProxy
    /// The realtime WebSockets, whose upgrades the connection is handed over to.
    private let upgrades: RealtimeUpgrade?
    private var machine: EdgeStateMachine
    private var context: ChannelHandlerContext?
    /// Starts the handlers behind (the router's) when bytes first go on to them, or tells that
    /// none will (`FrontedChannel`); `nil` once either is done.
    private var router: RouterStart?
    /// The connection carrying the current call to its service.
    private var upstream: UpstreamConnection?
    /// One timer serves the deadlines of the connection's calls one after another, and the instant
    /// it is set for: most answers begin long before their deadline, and when the timer fires for
    /// an earlier call the machine sets it again for the current one, so calls in quick succession
    /// cost no timer each.
    private var deadlineTimer: Scheduled<Void>?
    private var armedFor: NIODeadline?
    /// Actions are being performed: an event that arrives meanwhile (a write that made the socket
    /// full, say) leaves its actions to the loop already running, so they keep their order.
    private var performing = false
    /// The client's address as text, as sent upstream and keyed for rate limits (made once: it
    /// costs a formatting of the address).
    private lazy var peerIP = ClientAddressResolver.text(of: context?.channel.remoteAddress)

    init(_ proxy: EdgeProxy, upgrades: RealtimeUpgrade? = nil, router: RouterStart? = nil) {
        self.proxy = proxy
        self.upgrades = upgrades
        self.router = router
        self.machine = EdgeStateMachine(
            limits: proxy.limits,
            handsOver: { upgrades != nil && RealtimeUpgrade.handles($0) },
            classify: { [routes = proxy.checks.routes, cors = proxy.cors] request in
                routes.group(for: request.path).map { ProxiedCall(request, group: $0, cors: cors) }
            }
        )
    }

    // MARK: Events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        machine.clientClosed()
        perform()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        machine.clientRead(unwrapInboundIn(data))
        perform()
    }

    /// The handlers behind hear of a read's end only once bytes have gone on to them: on a
    /// connection only proxied calls have used they have nothing to act on.
    func channelReadComplete(context: ChannelHandlerContext) {
        machine.clientReadComplete()
        perform()
    }

    func read(context: ChannelHandlerContext) {
        machine.readRequested()
        perform()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        machine.clientWritabilityChanged(isWritable: context.channel.isWritable)
        perform()
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        machine.quiesce()
        perform()
    }

    func channelInactive(context: ChannelHandlerContext) {
        machine.clientClosed()
        perform()
        context.fireChannelInactive()
    }

    /// SwiftNIO's parser refused what the client sent the router.
    func routerRefusedRequest() {
        machine.routerRefusedRequest()
        perform()
    }

    func routedAnswerEnded() {
        machine.routedAnswerEnded()
        perform()
    }

    func upstreamRead(_ bytes: ByteBuffer) {
        machine.upstreamRead(bytes)
        perform()
    }

    func upstreamReadComplete() {
        machine.upstreamReadComplete()
        perform()
    }

    func upstreamWritabilityChanged() {
        machine.upstreamWritabilityChanged(isWritable: upstream?.isWritable ?? false)
        perform()
    }

    func upstreamEnded(_ error: (any Error)?) {
        machine.upstreamClosed(error)
        perform()
    }

    // MARK: Actions

    private func perform() {
        guard !performing else { return }
        performing = true
        defer { performing = false }
        while let action = machine.nextAction() { perform(action) }
    }

    private func perform(_ action: EdgeAction) {
        switch action {
        case .read: context?.read()
        case .write(let bytes): write(bytes)
        case .writeContinue: writeAndFlush(ByteBuffer(staticString: "HTTP/1.1 100 Continue\r\n\r\n"))
        case .flush: context?.flush()
        case .writeAnswerHead(let call, let head, let framing, let body):
            guard let context else { return }
            write(proxy.answerHead(head, framing: framing, of: proxied(call), allocator: context.channel.allocator))
            if let body { write(body) }
        case .answer(let call, let answer, let closes):
            guard let context else { return }
            let (bytes, status) = proxy.answer(answer, to: proxied(call), closes: closes, allocator: context.channel.allocator)
            writeAndFlush(bytes)
            proxy.record(proxied(call), status: status)
        case .answerUnreadable(let tooLarge):
            guard let context else { return }
            writeAndFlush(proxy.malformedRequestAnswer(tooLarge: tooLarge, allocator: context.channel.allocator))
        case .finished(let call, let status): proxy.record(proxied(call), status: status)
        case .completed(let call, let status, let reusable):
            if let upstream {
                upstream.detach()
                proxied(call).pool?.release(upstream, reusable: reusable)
                self.upstream = nil
            }
            context?.flush()
            proxy.record(proxied(call), status: status)
        case .close: context?.close(promise: nil)
        case .handOver(let request, let rest): handOver(request, rest: rest)
        case .closeOutput(let linger):
            guard let context else { return }
            context.close(mode: .output, promise: nil)
            context.eventLoop.assumeIsolated().scheduleTask(in: linger) { context.close(promise: nil) }
        case .passToRouter(let bytes): context?.fireChannelRead(wrapInboundOut(bytes))
        case .routerReadComplete: context?.fireChannelReadComplete()
        case .passedOn(let passed):
            guard let router = router.take() else { return }
            if !passed {
                router.never()
            } else if !router.begin() {
                context?.close(promise: nil)
            }
        case .quiesceRouter: context?.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        case .scheduleResume:
            context?.eventLoop.assumeIsolated().execute { [self] in
                guard self.context != nil else { return }
                machine.resume()
                perform()
            }
        case .admit(let call): settle(proxied(call), proxy.check(proxied(call), peerIP: peerIP))
        case .armDeadline(let deadline): arm(deadline)
        case .cancelDeadline:
            deadlineTimer?.cancel()
            deadlineTimer = nil
            armedFor = nil
        case .connect(let call, let reuse, let deadline):
            arm(deadline)
            connect(proxied(call), reuse: reuse)
        case .sendHead(let call, let flush):
            guard let upstream, let pool = proxied(call).pool else { return }
            upstream.write(proxy.forwardedHead(of: proxied(call), to: pool, peer: peerIP, allocator: upstream.channel.allocator))
            if flush { upstream.flush() }
        case .sendBody(let bytes): upstream?.write(bytes)
        case .flushUpstream: upstream?.flush()
        case .setUpstreamReading(let reading): upstream?.setReading(reading)
        case .closeUpstream:
            upstream?.detach()
            upstream?.close()
            upstream = nil
        }
    }

    private func write(_ bytes: ByteBuffer) {
        context?.write(wrapOutboundOut(.byteBuffer(bytes)), promise: nil)
    }

    private func writeAndFlush(_ bytes: ByteBuffer) {
        context?.writeAndFlush(wrapOutboundOut(.byteBuffer(bytes)), promise: nil)
    }

    /// The gateway's own call object, which the machine holds as an `EdgeCall`.
    private func proxied(_ call: any EdgeCall) -> ProxiedCall {
        unsafeDowncast(call, to: ProxiedCall.self)
    }

    // MARK: Realtime WebSockets

    /// Opens the realtime WebSocket `request` asks for: answers the handshake, puts the socket's
    /// handlers in front and leaves the pipeline, then gives them what the client sent after the
    /// head. A bad handshake is answered with its problem, and the connection closes.
    private func handOver(_ request: ClientRequest, rest: ByteBuffer) {
        guard let context, let upgrades else { return }
        let accepted: RealtimeUpgrade.Accepted
        do {
            accepted = try upgrades.accept(request, channel: context.channel)
        } catch {
            let requestID = RequestIDGenerator.id(requested: request.head.combined(.xRequestID))
            let answer = proxy.problemAnswer(
                error,
                path: request.path,
                head: request.head,
                requestID: requestID,
                closing: true,
                allocator: context.channel.allocator
            )
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(answer)), promise: nil)
            context.close(promise: nil)
            return
        }
        context.write(wrapOutboundOut(.byteBuffer(accepted.answer)), promise: nil)
        let pipeline = context.pipeline
        do {
            try pipeline.syncOperations.addHandlers(accepted.handlers, position: .first)
        } catch {
            context.close(promise: nil)
            return
        }
        context.flush()
        pipeline.syncOperations.removeHandler(context: context, promise: nil)
        if rest.readableBytes > 0 { pipeline.syncOperations.fireChannelRead(NIOAny(rest)) }
    }

    // MARK: Admission

    private func settle(_ call: ProxiedCall, _ verdict: EdgeProxy.Verdict) {
        switch verdict {
        case .preflight(let fields): machine.answeredPreflight(fields)
        case .refused(let problem): machine.refused(problem)
        case .admitted: machine.admitted(now: .now())
        case .needsKeys(let token):
            // The key set is fetched in a task; the call carries on on this loop when it ends.
            guard let context else { return }
            let keys = proxy.checks.keys
            context.eventLoop.makeFutureWithTask { () async -> EdgeChecks.Admission in
                do throws(AccessTokenError) {
                    return .user(try await keys.verify(token).subject)
                } catch {
                    return .refused(TokenProblem.refused(error))
                }
            }.assumeIsolated().whenSuccess { [self] admission in
                guard machine.isCurrent(call) else { return }
                settle(call, proxy.verdict(on: call, admission, peerIP: peerIP))
                perform()
            }
        }
    }

    // MARK: The service

    /// Takes a parked connection of this loop (unless `reuse` is off) or makes one.
    private func connect(_ call: ProxiedCall, reuse: Bool) {
        guard let context, let pool = call.pool else { return }
        if reuse, let connection = pool.takeParked(on: context.eventLoop) {
            return attach(connection, reused: true)
        }
        let connecting: EventLoopFuture<UpstreamConnection>
        do {
            connecting = try pool.connect(on: context.eventLoop)
        } catch {
            return machine.connectFailed(error, retryable: false)  // too many connections open: 503
        }
        connecting.assumeIsolated().whenComplete { [self] result in
            guard machine.isCurrent(call) else {
                if case .success(let connection) = result { pool.release(connection, reusable: true) }
                return
            }
            switch result {
            case .success(let connection): attach(connection, reused: false)
            case .failure(let error): machine.connectFailed(error, retryable: true)
            }
            perform()
        }
    }

    private func attach(_ connection: UpstreamConnection, reused: Bool) {
        upstream = connection
        connection.attach(self)
        machine.connected(reused: reused, isWritable: connection.isWritable)
    }

    private func arm(_ deadline: NIODeadline) {
        guard let context else { return }
        if deadlineTimer != nil, let armedFor, armedFor <= deadline { return }
        deadlineTimer?.cancel()
        armedFor = deadline
        deadlineTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            deadlineTimer = nil
            armedFor = nil
            machine.deadlinePassed(now: .now())
            perform()
        }
    }
}
