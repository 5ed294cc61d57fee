import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

// The floor for a realtime connection's memory (`RealtimeBenchmark --floor`): a WebSocket server
// written as SwiftNIO channel handlers alone — no task per connection — that answers every text
// frame with a Phoenix `phx_reply` of status ok, so a Supabase Realtime client's join and
// heartbeats are answered. Any plain HTTP request gets a 200 (`/readyz`, for `ServiceProcess`).
// It serves on HTTP_HOST:HTTP_PORT and stops when its parent does.

/// A realtime connection's frames, on the event loop.
final class PhoenixReplies: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    static let reply = #"["1","1","phoenix","phx_reply",{"status":"ok","response":{}}]"#

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            let reply = context.channel.allocator.buffer(string: Self.reply)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: reply)), promise: nil)
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }
}

/// 200 with no body for any request that is not an upgrade.
final class Ready: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["content-length": "0"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

let environment = ProcessInfo.processInfo.environment
let host = environment["HTTP_HOST"] ?? "127.0.0.1"
let port = Int(environment["HTTP_PORT"] ?? "") ?? 8080
let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
let upgrader = NIOWebSocketServerUpgrader(
    maxFrameSize: 1 << 16,
    shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
    upgradePipelineHandler: { channel, _ in channel.pipeline.addHandler(PhoenixReplies()) }
)
let server = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1_024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            // The upgrade takes the HTTP handlers out, `Ready` among them, before frames flow.
            let encoder = HTTPResponseEncoder()
            let decoder = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
            let ready = Ready()
            let upgrade = HTTPServerUpgradeHandler(
                upgraders: [upgrader],
                httpEncoder: encoder,
                extraHTTPHandlers: [decoder, ready],
                upgradeCompletionHandler: { _ in }
            )
            try channel.pipeline.syncOperations.addHandlers([encoder, decoder, upgrade, ready])
        }
    }
    .bind(host: host, port: port)
    .wait()
print("listening on \(host):\(port)")
let parent = getppid()
while getppid() == parent { sleep(1) }
try server.close().wait()
