import HummingbirdCore
import Logging
import NIOCore

/// A server's child channel with handlers of its own in front (`EdgeProxyHandler`), which see the
/// connection's bytes before any parser does, and behind them what `Inner` sets up (the parser and
/// the router) — set up only once bytes first go on to it. Most connections never get there (every
/// call on them proxied, or a realtime WebSocket the edge opened itself), and so never pay for the
/// router's handlers, in memory or in setting them up.
///
/// The front handlers are given a `RouterStart` to call when the connection's first bytes are to
/// go on to `Inner`'s handlers (`begin()`, which sets them up, with those `behind` after them), or
/// when none ever will (`never()`: the connection ended, or was handed over). `Inner` handles the
/// connection only in the first case.
struct FrontedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
        /// `Inner`'s value once bytes went on to it; `nil` when none ever will.
        let inner: EventLoopFuture<Inner.Value?>
    }

    let inner: Inner
    let front: @Sendable (RouterStart) -> [any ChannelHandler]
    let behind: @Sendable () -> [any ChannelHandler]

    init(
        _ inner: Inner,
        front: @escaping @Sendable (RouterStart) -> [any ChannelHandler],
        behind: @escaping @Sendable () -> [any ChannelHandler]
    ) {
        self.inner = inner
        self.front = front
        self.behind = behind
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let settled = channel.eventLoop.makePromise(of: Inner.Value?.self)
        let start = RouterStart(
            begin: { [inner, behind] in
                do {
                    let value = inner.setup(channel: channel, logger: logger)
                    try channel.pipeline.syncOperations.addHandlers(behind(), position: .last)
                    value.map(Optional.some).cascade(to: settled)
                    return true
                } catch {
                    settled.fail(error)
                    return false
                }
            },
            never: { settled.succeed(nil) }
        )
        do {
            try channel.pipeline.syncOperations.addHandlers(front(start), position: .first)
        } catch {
            settled.succeed(nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.eventLoop.makeSucceededFuture(Value(channel: channel, inner: settled.futureResult))
    }

    func handle(value: Value, logger: Logger) async {
        guard let inner = try? await value.inner.get() else { return }
        await self.inner.handle(value: inner, logger: logger)
    }
}

/// How the front handlers of a `FrontedChannel` start the handlers behind them, or tell that none
/// will be needed. On the connection's event loop, once.
struct RouterStart: Sendable {
    /// Sets the handlers behind up, before the first bytes go on to them; `false` when that failed
    /// (the connection should close).
    let begin: @Sendable () -> Bool
    /// No bytes will go on: the connection ended, or is another protocol's now.
    let never: @Sendable () -> Void
}
