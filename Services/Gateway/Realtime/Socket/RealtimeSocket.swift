import NIOCore
import NIOWebSocket
import RealtimeWire
import Synchronization

/// A whole message a client sent over a realtime WebSocket.
enum SocketMessage: Sendable {
    case text(String)
    case binary(ByteBuffer)
}

/// Why a realtime WebSocket ends: the close frame the gateway sends, and the reason the ending is
/// counted under (`gateway_realtime_disconnects_total`).
struct SocketEnding: Error, Sendable {
    let code: WebSocketErrorCode
    let reason: String
    let metric: String

    static let clientClosed = SocketEnding(code: .normalClosure, reason: "", metric: "client_closed")
    static let slowClient = SocketEnding(code: RealtimeCloseCode.slowClient, reason: "client too slow: event buffer full", metric: "slow_client")
    static let shuttingDown = SocketEnding(code: .goingAway, reason: "the gateway is shutting down", metric: "shutdown")
    static let pingTimeout = SocketEnding(code: .goingAway, reason: "Ping timeout", metric: "ping_timeout")

    static func protocolError(_ reason: String, code: WebSocketErrorCode = .protocolError) -> SocketEnding {
        SocketEnding(code: code, reason: reason, metric: "protocol_error")
    }
}

/// A realtime protocol spoken over one `RealtimeSocket`. Its calls come one at a time, in order:
/// `opened()` first, then each message as it came, then `closed(_:)` once, after whichever call
/// was running has returned (the messages still waiting are dropped). A call that awaits (a token
/// check) holds up the next, and the socket stops reading while too many wait. Between calls the
/// connection has no task: an idle one costs its channel and what the session keeps.
protocol RealtimeSocketSession: AnyObject, Sendable {
    func opened() async
    func received(_ message: SocketMessage) async
    func closed(_ ending: SocketEnding)
}

/// A realtime WebSocket as its session sees it: the client's queue to write from, the close, and
/// the one timer a session may set. Safe from any task; the work happens on the connection's event
/// loop (`RealtimeSocketHandler`).
struct RealtimeSocket: Sendable {
    let channel: any Channel
    fileprivate let handler: NIOLoopBound<RealtimeSocketHandler>

    /// Writes the queue's frames to the client as they come and as fast as its socket takes them;
    /// an overflow ends the connection as a slow client's. `pushed` hears of each event frame
    /// written, with the time it waited.
    func attach(_ queue: ClientQueue, pushed: @escaping @Sendable (ContinuousClock.Duration) -> Void) {
        onLoop { $0.attach(queue, pushed: pushed) }
    }

    /// Ends the connection with `ending`'s close frame (the first ending counts; later ones are
    /// ignored), after the frames already queued.
    func close(_ ending: SocketEnding) {
        onLoop { $0.close(ending) }
    }

    /// Calls `body` at `deadline` unless the deadline is set again (or cleared with `nil`) first,
    /// or the connection ends. One deadline per connection, on its event loop's timer.
    func setDeadline(_ deadline: ContinuousClock.Instant?, _ body: @escaping @Sendable () -> Void) {
        onLoop { $0.setDeadline(deadline, body) }
    }

    private func onLoop(_ body: @escaping @Sendable (RealtimeSocketHandler) -> Void) {
        let handler = self.handler
        if channel.eventLoop.inEventLoop {
            body(handler.value)
        } else {
            channel.eventLoop.execute { body(handler.value) }
        }
    }
}

/// The realtime WebSocket's own handler, at the front of its pipeline behind SwiftNIO's frame
/// decoder and encoder, once the edge has answered the upgrade (`RealtimeUpgrade`): it reads frames
/// into messages (fragments joined, masking and UTF-8 checked, pings answered), hands them to the
/// session in order, writes the client's queue while the socket takes it, pings the client every
/// `heartbeat` (one without its pong by the next ends the connection), and runs the close
/// handshake. All of it on the event loop, with a task only while a session call runs.
final class RealtimeSocketHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// The most messages waiting for the session before reading pauses.
    static let maxWaitingMessages = 16

    /// Set as the handler is made; let go of once the connection has ended, since the session
    /// refers back to the handler through its socket.
    private var session: (any RealtimeSocketSession)?
    private let calls = SessionCalls()
    let maxMessageSize: Int
    private let heartbeat: TimeAmount
    private var context: ChannelHandlerContext?

    private var queue: ClientQueue?
    private var pushed: (@Sendable (ContinuousClock.Duration) -> Void)?
    /// A message in fragments: its kind and what has come of it.
    private var fragments: (opcode: WebSocketOpcode, data: ByteBuffer)?
    /// Set once the close frame has gone (or the connection ended).
    private var ending: SocketEnding?
    private var closeTimer: Scheduled<Void>?
    private var pings: RepeatedTask?
    private var awaitingPong = false
    private var deadline: Scheduled<Void>?
    private var readHeld = false

    /// Made on `channel`'s event loop, with the session `session` makes for the socket.
    init(
        channel: any Channel,
        maxMessageSize: Int,
        heartbeat: Duration,
        session: (RealtimeSocket) -> any RealtimeSocketSession
    ) {
        self.maxMessageSize = maxMessageSize
        self.heartbeat = TimeAmount(heartbeat)
        self.session = session(RealtimeSocket(channel: channel, handler: NIOLoopBound(self, eventLoop: channel.eventLoop)))
    }

    // MARK: Events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        calls.onReadable { [eventLoop = context.eventLoop] in eventLoop.execute { handler.value.resumeReading() } }
        pings = context.eventLoop.scheduleRepeatedTask(initialDelay: heartbeat, delay: heartbeat) { _ in handler.value.ping() }
        call(.opened)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        ended()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        ended()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil else { return fail(.protocolError("client frames must be masked")) }
        guard !frame.rsv1, !frame.rsv2, !frame.rsv3 else { return fail(.protocolError("no extension was agreed")) }
        switch frame.opcode {
        case .ping:
            guard frame.fin else { return fail(.protocolError("a ping cannot be fragmented")) }
            guard ending == nil else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            awaitingPong = false
        case .connectionClose:
            receivedClose(frame)
        case .text, .binary:
            guard fragments == nil else { return fail(.protocolError("a new message began before the last one ended")) }
            if frame.fin {
                message(frame.opcode, frame.unmaskedData)
            } else {
                fragments = (frame.opcode, frame.unmaskedData)
            }
        case .continuation:
            guard let (opcode, first) = fragments else { return fail(.protocolError("a continuation without a message")) }
            var data = first
            var more = frame.unmaskedData
            guard data.readableBytes + more.readableBytes <= maxMessageSize else {
                return fail(.protocolError("a message is at most \(maxMessageSize) bytes", code: .messageTooLarge))
            }
            fragments = nil
            data.writeBuffer(&more)
            if frame.fin {
                message(opcode, data)
            } else {
                fragments = (opcode, data)
            }
        default:
            fail(.protocolError("unknown opcode"))
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { drain() }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The frame decoder's: a frame too large or malformed.
        if let error = error as? NIOWebSocketError, error == .invalidFrameLength {
            fail(.protocolError("a frame is at most \(maxMessageSize) bytes", code: .messageTooLarge))
        } else {
            fail(.protocolError("unreadable frame"))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        close(.shuttingDown)
    }

    /// Holds reads while the session has many messages waiting.
    func read(context: ChannelHandlerContext) {
        if calls.holdsReads() {
            readHeld = true
        } else {
            context.read()
        }
    }

    // MARK: Messages

    private func message(_ opcode: WebSocketOpcode, _ data: ByteBuffer) {
        guard ending == nil else { return }
        guard data.readableBytes <= maxMessageSize else {
            return fail(.protocolError("a message is at most \(maxMessageSize) bytes", code: .messageTooLarge))
        }
        if opcode == .text {
            guard let text = String(validating: data.readableBytesView, as: UTF8.self) else {
                return fail(.protocolError("text messages are UTF-8", code: .dataInconsistentWithMessage))
            }
            call(.message(.text(text)))
        } else {
            call(.message(.binary(data)))
        }
    }

    /// Queues a session call, with a task to make it unless one is making the calls before it.
    private func call(_ call: SessionCalls.Call) {
        guard let session, calls.add(call) else { return }
        Task { [calls] in await calls.work(session) }
    }

    private func resumeReading() {
        guard readHeld, let context else { return }
        readHeld = false
        context.read()
    }

    // MARK: Writing

    fileprivate func attach(_ queue: ClientQueue, pushed: @escaping @Sendable (ContinuousClock.Duration) -> Void) {
        guard let context else { return queue.close() }
        self.queue = queue
        self.pushed = pushed
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        queue.onReady { [eventLoop = context.eventLoop] in eventLoop.execute { handler.value.drain() } }
        drain()
    }

    /// Writes queued frames while the socket takes them; an overflow ends the connection.
    private func drain() {
        guard ending == nil else { return }
        if writeQueued() { close(.slowClient) }
    }

    /// Writes queued frames while the socket takes them; `true` when the queue has overflowed.
    private func writeQueued() -> Bool {
        guard let context, let queue else { return false }
        var wrote = false
        defer { if wrote { context.flush() } }
        while context.channel.isWritable {
            switch queue.poll() {
            case .frame(let frame):
                let data: ByteBuffer
                let opcode: WebSocketOpcode
                switch frame.content {
                case .text(let text): (data, opcode) = (context.channel.allocator.buffer(string: text), .text)
                case .binary(let bytes): (data, opcode) = (bytes, .binary)
                }
                context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: opcode, data: data)), promise: nil)
                wrote = true
                if frame.eventID != nil { pushed?(.now - frame.enqueuedAt) }
            case .empty:
                return false
            case .ended(let reason):
                return reason == .overflowed
            }
        }
        // The socket is full: the queue may have overflowed meanwhile (its wake brought us here).
        return queue.ending == .overflowed
    }

    // MARK: Closing

    fileprivate func close(_ ending: SocketEnding) {
        guard self.ending == nil, let context else { return }
        let ending = writeQueued() ? .slowClient : ending
        self.ending = ending
        queue?.close()
        stopTimers()
        var data = context.channel.allocator.buffer(capacity: 2 + ending.reason.utf8.count)
        data.write(webSocketErrorCode: ending.code)
        data.writeString(String(decoding: ending.reason.utf8.prefix(123), as: UTF8.self))
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
        // The client answers with its close frame; one that does not (its socket full, or gone
        // quiet) has the connection closed under it.
        closeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(RealtimeHub.overflowGrace)) { context.close(promise: nil) }
    }

    private func fail(_ ending: SocketEnding) {
        fragments = nil
        close(ending)
    }

    private func receivedClose(_ frame: WebSocketFrame) {
        guard let context else { return }
        if ending == nil {
            // The client's close: answered with its code (RFC 6455 §5.5.1).
            var data = frame.unmaskedData
            let code = data.readableBytes >= 2 ? data.readWebSocketErrorCode() : nil
            ending = .clientClosed
            queue?.close()
            stopTimers()
            var answer = context.channel.allocator.buffer(capacity: 2)
            answer.write(webSocketErrorCode: code ?? .normalClosure)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: answer)), promise: nil)
        }
        context.close(promise: nil)
    }

    /// The connection is over, whoever ended it: the session hears so once its running call is done.
    private func ended() {
        stopTimers()
        closeTimer?.cancel()
        closeTimer = nil
        guard !calls.isClosed else { return }
        queue?.close()
        call(.closed(ending ?? .clientClosed))
        session = nil
    }

    private func stopTimers() {
        pings?.cancel()
        pings = nil
        deadline?.cancel()
        deadline = nil
    }

    // MARK: Timers

    private func ping() {
        guard ending == nil, let context else { return }
        guard !awaitingPong else { return close(.pingTimeout) }
        awaitingPong = true
        var data = context.channel.allocator.buffer(capacity: 8)
        data.writeInteger(UInt64.random(in: .min ... .max))
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: data)), promise: nil)
    }

    fileprivate func setDeadline(_ instant: ContinuousClock.Instant?, _ body: @escaping @Sendable () -> Void) {
        deadline?.cancel()
        deadline = nil
        guard let instant, ending == nil, let context else { return }
        let delay = ContinuousClock.now.duration(to: instant)
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(max(delay, .zero))) { body() }
    }
}

/// A session's calls waiting their turn, and the task working through them while there are any.
private final class SessionCalls: Sendable {
    enum Call: Sendable {
        case opened
        case message(SocketMessage)
        case closed(SocketEnding)
    }

    private struct State {
        var calls = CircularBuffer<Call>(initialCapacity: 2)
        var running = false
        var messages = 0
        var closed = false
        var readsHeld = false
        var onReadable: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Has `body` told when reading may go on after `holdsReads()` held it.
    func onReadable(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.onReadable = body }
    }

    /// Whether enough messages wait that reading should pause (`onReadable` says when it may go on).
    func holdsReads() -> Bool {
        state.withLock { state in
            guard state.messages >= RealtimeSocketHandler.maxWaitingMessages else { return false }
            state.readsHeld = true
            return true
        }
    }

    /// Queues a call; `true` when no task is working through the calls (the caller starts one,
    /// with `work(_:)`). `closed` drops the messages still waiting.
    func add(_ call: Call) -> Bool {
        state.withLock { state -> Bool in
            guard !state.closed else { return false }
            if case .closed = call {
                state.closed = true
                state.onReadable = nil
                state.calls = CircularBuffer(state.calls.filter { if case .message = $0 { false } else { true } })
                state.messages = 0
            }
            if case .message = call { state.messages += 1 }
            state.calls.append(call)
            guard !state.running else { return false }
            state.running = true
            return true
        }
    }

    /// Makes the calls until none is left.
    func work(_ session: any RealtimeSocketSession) async {
        while let call = next() {
            switch call {
            case .opened: await session.opened()
            case .message(let message): await session.received(message)
            case .closed(let ending): session.closed(ending)
            }
        }
    }

    /// The next call; `nil` when there is none, and the task ends.
    private func next() -> Call? {
        let (call, resume) = state.withLock { state -> (Call?, (@Sendable () -> Void)?) in
            guard let call = state.calls.popFirst() else {
                state.running = false
                return (nil, nil)
            }
            if case .message = call { state.messages -= 1 }
            guard state.readsHeld, state.messages <= RealtimeSocketHandler.maxWaitingMessages / 2 else { return (call, nil) }
            state.readsHeld = false
            return (call, state.onReadable)
        }
        resume?()
        return call
    }
}
