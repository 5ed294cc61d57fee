import HTTPEdge
import NIOCore

/// What a client connection's `EdgeProxyHandler` is told of the upstream connection carrying its
/// call, on the connection's event loop.
protocol UpstreamReceiver: AnyObject {
    func upstreamRead(_ bytes: ByteBuffer)
    func upstreamReadComplete()
    /// The connection can take more of the request's body, or cannot for now.
    func upstreamWritabilityChanged()
    /// The connection closed (`error` is `nil`) or failed.
    func upstreamEnded(_ error: (any Error)?)
}

/// A keep-alive connection to an upstream service that requests are written to and answers read
/// from as bytes, with no HTTP codec in its pipeline: `EdgeProxyHandler` reads what it needs of
/// an answer's head and forwards the rest as it comes.
///
/// While parked it has no receiver: anything the upstream sends then, or its closing, closes it,
/// so an open parked connection can carry the next exchange.
final class UpstreamConnection: PooledConnection {
    let channel: any Channel
    private let handler: NIOLoopBound<UpstreamHandler>

    /// Sets up a new connection's pipeline: the one handler that hands its bytes on.
    static func addHandlers(to pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHandler(UpstreamHandler())
    }

    /// Wraps a channel set up by `addHandlers(to:)`; on the channel's event loop.
    init(adopting channel: any Channel) throws {
        self.channel = channel
        self.handler = NIOLoopBound(try channel.pipeline.syncOperations.handler(type: UpstreamHandler.self), eventLoop: channel.eventLoop)
    }

    var isOpen: Bool { channel.isActive }

    /// Whether a write now would go out without queueing past the channel's high watermark.
    var isWritable: Bool { channel.isWritable }

    func close() {
        channel.close(promise: nil)
    }

    /// Gives the connection's answers to `receiver` (on the connection's loop) until `detach()`.
    func attach(_ receiver: any UpstreamReceiver) {
        handler.value.receiver = receiver
    }

    func detach() {
        handler.value.receiver = nil
        setReading(true)
    }

    /// Queues bytes of a request; `flush()` sends them.
    func write(_ bytes: ByteBuffer) {
        channel.write(bytes, promise: nil)
    }

    func flush() {
        channel.flush()
    }

    /// Pauses or resumes reading the upstream's socket (backpressure from a slow client).
    func setReading(_ reading: Bool) {
        handler.value.setReading(reading)
    }
}

private final class UpstreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    var receiver: (any UpstreamReceiver)?
    private var context: ChannelHandlerContext?
    private var reading = true

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func setReading(_ reading: Bool) {
        guard reading != self.reading, let context else { return }
        self.reading = reading
        try? context.channel.syncOptions?.setOption(.autoRead, value: reading)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let receiver else {
            // Nothing was asked of a parked connection: whatever comes is not ours to read.
            context.close(promise: nil)
            return
        }
        receiver.upstreamRead(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        receiver?.upstreamReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        receiver?.upstreamWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let receiver = receiver
        self.receiver = nil
        receiver?.upstreamEnded(nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let receiver = receiver
        self.receiver = nil
        receiver?.upstreamEnded(error)
        context.close(promise: nil)
    }
}
