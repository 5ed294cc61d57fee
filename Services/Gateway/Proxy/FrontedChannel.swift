import HummingbirdCore
import Logging
import NIOCore

/// A server's child channel with handlers of its own in front of everything `Inner` sets up, so
/// they see the connection's bytes before any parser does (the direct path's `DirectProxyHandler`).
struct FrontedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let front: @Sendable () -> [any ChannelHandler]

    init(_ inner: Inner, front: @escaping @Sendable () -> [any ChannelHandler]) {
        self.inner = inner
        self.front = front
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandlers(front(), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
