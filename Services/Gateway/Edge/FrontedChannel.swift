import HummingbirdCore
import Logging
import NIOCore

/// A server's child channel with handlers of its own in front of everything `Inner` sets up, so
/// they see the connection's bytes before any parser does (`EdgeProxyHandler`), and behind what
/// `Inner` sets up at first (the parser).
///
/// The front handlers are given a promise to fulfil when the connection's first bytes go on to
/// `Inner`'s handlers (`true`) or the connection ends without any having gone (`false`). `Inner`
/// handles the connection only in the first case: a connection only the front handlers served
/// would otherwise end, for the WebSocket upgrade channel, in an upgrade it never saw begin,
/// which it reports as an error.
struct FrontedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let inner: Inner.Value
        let passedOn: EventLoopFuture<Bool>

        var channel: any Channel { inner.channel }
    }

    let inner: Inner
    let front: @Sendable (_ passedOn: EventLoopPromise<Bool>) -> [any ChannelHandler]
    let behind: @Sendable () -> [any ChannelHandler]

    init(
        _ inner: Inner,
        front: @escaping @Sendable (_ passedOn: EventLoopPromise<Bool>) -> [any ChannelHandler],
        behind: @escaping @Sendable () -> [any ChannelHandler]
    ) {
        self.inner = inner
        self.front = front
        self.behind = behind
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let passedOn = channel.eventLoop.makePromise(of: Bool.self)
        do {
            try channel.pipeline.syncOperations.addHandlers(front(passedOn), position: .first)
        } catch {
            passedOn.succeed(false)
            return channel.eventLoop.makeFailedFuture(error)
        }
        do {
            let value = inner.setup(channel: channel, logger: logger)
            try channel.pipeline.syncOperations.addHandlers(behind(), position: .last)
            return value.map { Value(inner: $0, passedOn: passedOn.futureResult) }
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard (try? await value.passedOn.get()) == true else { return }
        await inner.handle(value: value.inner, logger: logger)
    }
}
