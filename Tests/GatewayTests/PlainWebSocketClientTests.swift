import Foundation
import NIOCore
import NIOPosix
import PlainWebSocket
import Synchronization
import TestSupport
import Testing

/// The test client must see frames a server sends in the same TCP write as its `101` (the gateway
/// does exactly that when it refuses a connection); the client it replaces lost them.
@Suite("WebSocket test client")
struct PlainWebSocketClientTests {
    @Test func framesInTheSameWriteAsTheUpgradeResponseAreReceived() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        let port = try #require(server.channel.localAddress?.port)
        let serving = Task {
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    try await connection.executeThenClose { inbound, outbound in
                        var request = ""
                        var reading = inbound.makeAsyncIterator()
                        while !request.contains("\r\n\r\n"), let buffer = try await reading.next() {
                            request += String(buffer: buffer)
                        }
                        let key =
                            request.components(separatedBy: "\r\n")
                            .first { $0.lowercased().hasPrefix("sec-websocket-key:") }?
                            .dropFirst("sec-websocket-key:".count).trimmingCharacters(in: .whitespaces) ?? ""
                        let accept = PlainWebSocketClient.acceptValue(for: key)
                        var reply = ByteBuffer(
                            string:
                                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n"
                        )
                        let greeting = Array(#"{"op":"ready"}"#.utf8)
                        reply.writeBytes([0x81, UInt8(greeting.count)] + greeting)
                        let reason = Array("bye".utf8)
                        reply.writeBytes([0x88, UInt8(2 + reason.count), 0x0F, 0xA1] + reason)
                        try await outbound.write(reply)
                        // Wait for the client's answering close frame, then hang up.
                        _ = try await reading.next()
                    }
                    return
                }
            }
        }
        defer { serving.cancel() }

        let texts = TextLog()
        let close = try await PlainWebSocketClient.run(url: "ws://127.0.0.1:\(port)/") { texts.append($0) }
        #expect(texts.all == [#"{"op":"ready"}"#])
        #expect(close == .init(code: 4001, reason: "bye"))
    }
}

private final class TextLog: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ text: String) { lines.withLock { $0.append(text) } }
    var all: [String] { lines.withLock { $0 } }
}
