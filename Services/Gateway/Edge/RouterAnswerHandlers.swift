import NIOCore
import NIOHTTP1
import NIOHTTPTypes

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
            front.routerRefusedRequest()
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
