import NIOCore
import NIOHTTP1

/// Why an exchange with an upstream failed after its connection was made.
enum UpstreamExchangeError: Error, Equatable {
    /// The connection ended before any byte of an answer: on a reused connection, most likely
    /// the upstream closed it while it sat idle (so the request was never handled).
    case closedBeforeResponse
    /// The connection ended in the middle of the answer.
    case closedMidResponse
    /// No answer began before the route's deadline.
    case timedOut
    /// The answer is not HTTP/1 as we know it.
    case malformed
}

/// One keep-alive HTTP/1.1 connection to an upstream, used by one exchange at a time.
///
/// The socket is read as data comes, until more than `ResponseReader.highWatermark` bytes of the
/// answer wait unread by the caller; reading then pauses until the caller has taken all but
/// `lowWatermark` of them. So a large answer for a slow client waits in the upstream's socket
/// rather than in the gateway's memory, and an ordinary answer costs no switching of the read
/// interest on and off. An idle connection in the pool is still read, so an upstream that closes
/// it (or sends anything) is noticed at once.
///
/// Every method may be called from any thread. Called on the connection's event loop (the usual
/// case, when tasks run on the event loops and the pool leased a connection of the caller's
/// loop), a part already read is returned without suspending.
final class UpstreamConnection: PooledConnection {
    let channel: any Channel
    private let reader: NIOLoopBound<ResponseReader>

    /// Sets up a new connection's pipeline: SwiftNIO's HTTP client codec, then the reader.
    static func addHandlers(to pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHTTPClientHandlers()
        try pipeline.addHandler(ResponseReader())
    }

    /// Wraps a channel set up by `addHandlers(to:)`; on the channel's event loop.
    init(adopting channel: any Channel) throws {
        self.channel = channel
        self.reader = NIOLoopBound(try channel.pipeline.syncOperations.handler(type: ResponseReader.self), eventLoop: channel.eventLoop)
    }

    /// Whether the connection is still open. A parked connection that the upstream closes, or
    /// that receives anything, is closed at once, so an open one in the pool can carry an exchange.
    var isOpen: Bool { channel.isActive }

    /// Starts an exchange: its answer must begin before `deadline`, or the connection is closed
    /// (`UpstreamExchangeError.timedOut`).
    func begin(deadline: NIODeadline) {
        onLoop { $0.begin(deadline: deadline) }
    }

    /// The answer has begun: the deadline no longer applies.
    func answerBegan() {
        onLoop { $0.cancelDeadline() }
    }

    /// After a complete exchange: waits idle for the next one, or closes if anything is left over.
    func park() {
        onLoop { $0.park() }
    }

    /// Writes and flushes `parts` (one flush for all). Waits for the write to reach the socket
    /// only while the connection is not writable (its send buffer is full): a fast upload is not
    /// held up chunk by chunk, and a slow upstream still slows the sender down. A write that
    /// fails unwaited closes the connection, which the next write or read reports.
    func write(_ parts: [HTTPClientRequestPart]) async throws {
        // From another thread, NIO queues the writes on the loop in order.
        for part in parts.dropLast() { channel.write(part, promise: nil) }
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(parts.last!, promise: written)
        if !channel.isWritable { try await written.futureResult.get() }
    }

    /// The next part of the answer.
    /// - Throws: `UpstreamExchangeError`, or the channel's error.
    func next() async throws -> HTTPClientResponsePart {
        if channel.eventLoop.inEventLoop {
            switch nextOnLoop() {
            case .ready(let part): return part
            case .failed(let error): throw error
            case .later(let future): return try await future.get()
            }
        }
        let reader = reader, loop = channel.eventLoop
        return try await loop.flatSubmit {
            switch reader.value.next() {
            case .ready(let part): return loop.makeSucceededFuture(part)
            case .failed(let error): return loop.makeFailedFuture(error)
            case .later(let future): return future
            }
        }.get()
    }

    /// The next part of the answer, for a caller on the connection's event loop: at hand, failed,
    /// or still to come.
    private func nextOnLoop() -> UpstreamNext {
        channel.eventLoop.preconditionInEventLoop()
        return reader.value.next()
    }

    /// Closes the connection; an exchange waiting on it fails.
    func close() {
        channel.close(promise: nil)
    }

    /// Runs `body` on the connection's loop: now when called there, otherwise queued (the loop
    /// runs its tasks in order, so what the caller does next on the connection comes after).
    private func onLoop(_ body: @escaping @Sendable (ResponseReader) -> Void) {
        if channel.eventLoop.inEventLoop {
            body(reader.value)
        } else {
            let reader = reader
            channel.eventLoop.execute { body(reader.value) }
        }
    }
}

/// The next part of an upstream's answer.
enum UpstreamNext {
    case ready(HTTPClientResponsePart)
    case failed(any Error)
    case later(EventLoopFuture<HTTPClientResponsePart>)
}

/// Hands the response parts of one exchange at a time to `UpstreamConnection.next()`: a part that
/// arrives with no one waiting is kept, and reading pauses while more than `highWatermark` bytes of body are kept.
private final class ResponseReader: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private enum State {
        /// In the pool, a read pending to notice a close.
        case idle
        /// Carrying an exchange; `began` once the answer's head has arrived.
        case exchanging(began: Bool)
        /// Closed or failed: the error every later call gets.
        case finished(any Error)
    }

    /// Answer bytes waiting unread past which reading pauses, and below which it resumes.
    static let highWatermark = 256 << 10
    static let lowWatermark = 64 << 10

    private var state: State = .idle
    private var buffered = CircularBuffer<HTTPClientResponsePart>(initialCapacity: 4)
    private var bufferedBytes = 0
    private var paused = false
    private var waiter: EventLoopPromise<HTTPClientResponsePart>?
    private var deadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func begin(deadline: NIODeadline) {
        // A connection that failed meanwhile keeps its error for `next()`.
        guard case .idle = state, let context else { return }
        state = .exchanging(began: false)
        self.deadline = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            // An answer that began just before its caller could cancel this one stands.
            if case .exchanging(began: true) = state { return }
            finish(UpstreamExchangeError.timedOut)
            context.close(promise: nil)
        }
    }

    func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    func park() {
        cancelDeadline()
        guard case .exchanging = state, buffered.isEmpty, context != nil else {
            finish(UpstreamExchangeError.malformed)
            context?.close(promise: nil)
            return
        }
        state = .idle
    }

    func next() -> UpstreamNext {
        if !buffered.isEmpty {
            let part = buffered.removeFirst()
            if case .body(let chunk) = part {
                bufferedBytes -= chunk.readableBytes
                if paused, bufferedBytes <= Self.lowWatermark { setReading(true) }
            }
            return .ready(part)
        }
        if case .finished(let error) = state { return .failed(error) }
        guard let context else { return .failed(UpstreamExchangeError.closedBeforeResponse) }
        let promise = context.eventLoop.makePromise(of: HTTPClientResponsePart.self)
        waiter = promise
        if paused { setReading(true) }
        return .later(promise.futureResult)
    }

    private func setReading(_ reading: Bool) {
        guard let context else { return }
        paused = !reading
        try? context.channel.syncOptions?.setOption(.autoRead, value: reading)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch state {
        case .idle:
            // Nothing is asked of an idle connection: whatever comes is not ours to read.
            finish(UpstreamExchangeError.malformed)
            context.close(promise: nil)
        case .exchanging:
            if case .head = part { state = .exchanging(began: true) }
            if let waiter {
                self.waiter = nil
                waiter.succeed(part)
            } else {
                buffered.append(part)
                if case .body(let chunk) = part {
                    bufferedBytes += chunk.readableBytes
                    if !paused, bufferedBytes > Self.highWatermark { setReading(false) }
                }
            }
        case .finished:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .exchanging(let began) = state {
            finish(began ? UpstreamExchangeError.closedMidResponse : UpstreamExchangeError.closedBeforeResponse)
        } else {
            finish(UpstreamExchangeError.closedBeforeResponse)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(error is HTTPParserError ? UpstreamExchangeError.malformed : error)
        context.close(promise: nil)
    }

    /// Ends the connection's life: a waiting exchange fails with `error` (the first reason wins).
    private func finish(_ error: any Error) {
        if case .finished = state { return }
        state = .finished(error)
        cancelDeadline()
        if let waiter {
            self.waiter = nil
            waiter.fail(error)
        }
    }
}
