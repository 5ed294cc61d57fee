import HummingbirdCore
import Logging
import NIOCore

/// A server's child channel with handlers of its own in front of everything `Inner` sets up, so
/// they see the connection's bytes before any parser does (the direct path's `DirectProxyHandler`),
/// and behind what `Inner` sets up at first (the parser).
struct FrontedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let front: @Sendable () -> [any ChannelHandler]
    let behind: @Sendable () -> [any ChannelHandler]

    init(_ inner: Inner, front: @escaping @Sendable () -> [any ChannelHandler], behind: @escaping @Sendable () -> [any ChannelHandler]) {
        self.inner = inner
        self.front = front
        self.behind = behind
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandlers(front(), position: .first)
            let value = inner.setup(channel: channel, logger: logger)
            try channel.pipeline.syncOperations.addHandlers(behind(), position: .last)
            return value
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
