import Crypto
import Foundation
import HTTPEdge
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOWebSocket
import ServiceKit

/// The realtime WebSockets' opening handshake (RFC 6455 §4.2), answered at the edge: the edge's
/// handler gives it each upgrade to `/v1/realtime` or `/realtime/v1/websocket`, and it checks the
/// handshake, answers `101` and turns the connection into a `RealtimeSocketHandler` for the path's
/// session. No task and no HTTP server stack stay with the connection (each used to hold about
/// 58 KiB of an idle socket's memory).
struct RealtimeUpgrade: Sendable {
    let endpoints: RealtimeController

    /// The paths the edge hands over when their requests ask for an upgrade.
    static func handles(_ request: ClientRequest) -> Bool {
        request.path == "/v1/realtime" || request.path == "/realtime/v1/websocket"
    }

    /// What an accepted handshake gives the edge: the answer to write, then the handlers to put
    /// at the front of the pipeline.
    struct Accepted {
        let answer: ByteBuffer
        let handlers: [any ChannelHandler]
    }

    /// The connection as a realtime WebSocket for `request`'s path, or the problem with its
    /// handshake. On the channel's event loop.
    func accept(_ request: ClientRequest, channel: any Channel) throws(Problem) -> Accepted {
        let head = request.head
        guard request.method == .get, !request.isHTTP10, head.lists(.upgrade, "websocket") else {
            throw Self.badHandshake("A WebSocket opens with a GET over HTTP/1.1 with Upgrade: websocket.")
        }
        guard head.combined(named: "sec-websocket-version") == "13" else {
            throw Problem(
                status: .upgradeRequired,
                type: "websocket-version",
                title: "WebSocket version not supported",
                detail: "This gateway speaks WebSocket version 13 (RFC 6455).",
                headers: [HTTPField.Name("Sec-WebSocket-Version")!: "13"]
            )
        }
        guard let key = head.combined(named: "sec-websocket-key"), Data(base64Encoded: key)?.count == 16 else {
            throw Self.badHandshake("Sec-WebSocket-Key must be 16 bytes in base64.")
        }
        let query = URI(request.target).queryParameters
        let caller = endpoints.addresses.resolve(peer: channel.remoteAddress, forwardedFor: head.combined(.xForwardedFor))
        let heartbeat = endpoints.settings.heartbeat
        let handler =
            if request.path == "/v1/realtime" {
                RealtimeSocketHandler(channel: channel, maxMessageSize: 16 << 10, heartbeat: heartbeat) { [endpoints] socket in
                    WebSocketSession(
                        endpoints: endpoints,
                        socket: socket,
                        token: HTTPFields.bearerToken(in: head.combined(.authorization)),
                        caller: caller,
                        channels: query["channels"].map(String.init)
                    )
                }
            } else {
                RealtimeSocketHandler(channel: channel, maxMessageSize: 64 << 10, heartbeat: heartbeat) { [endpoints] socket in
                    SupabaseRealtimeSession(
                        endpoints: endpoints,
                        socket: socket,
                        apikey: query["apikey"].map(String.init) ?? head.combined(.apiKey),
                        version: query["vsn"].map(String.init),
                        caller: caller
                    )
                }
            }
        var answer = channel.allocator.buffer(capacity: 160)
        answer.writeStaticString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ")
        answer.writeString(Self.acceptValue(key: key))
        answer.writeStaticString("\r\n\r\n")
        return Accepted(
            answer: answer,
            handlers: [ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: handler.maxMessageSize)), WebSocketFrameEncoder(), handler]
        )
    }

    /// `Sec-WebSocket-Accept` for the client's key (RFC 6455 §4.2.2).
    static func acceptValue(key: String) -> String {
        Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    private static func badHandshake(_ detail: String) -> Problem {
        Problem(status: .badRequest, type: "bad-websocket-handshake", title: "Bad WebSocket handshake", detail: detail)
    }
}
