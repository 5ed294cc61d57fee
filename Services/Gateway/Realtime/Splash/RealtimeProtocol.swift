import Foundation
import NIOWebSocket

/// What a WebSocket client sends: JSON text messages with an `op`.
///
/// - `{"op":"auth","token":"…"}`: the access token, when the upgrade request had no
///   `Authorization` header, and again with a fresh token before the current one expires;
/// - `{"op":"subscribe","channel":"orders:…","ref":"1"}`, `{"op":"unsubscribe","channel":"…"}`;
/// - `{"op":"ping"}`: answered with `{"op":"pong"}`.
struct ClientMessage: Decodable {
    enum Operation: String, Decodable {
        case auth, subscribe, unsubscribe, ping
    }

    var op: Operation
    var token: String?
    var channel: String?
    /// Echoed in the answer, so a client can match it to its request.
    var ref: String?
}

/// What the gateway sends besides events (CloudEvents, recognisable by `specversion`).
struct ServerMessage: Encodable {
    var op: String
    var user: String?
    var expiresAt: String?
    var channel: String?
    var ref: String?
    var code: String?
    var message: String?

    static func ready(_ viewer: Viewer) -> Self {
        .init(op: "ready", user: viewer.user, expiresAt: viewer.expiresAt.formatted(.iso8601))
    }

    static func subscribed(_ channel: RealtimeChannel, ref: String?) -> Self {
        .init(op: "subscribed", channel: channel.description, ref: ref)
    }

    static func unsubscribed(_ channel: String, ref: String?) -> Self {
        .init(op: "unsubscribed", channel: channel, ref: ref)
    }

    static func error(_ code: String, _ message: String, channel: String? = nil, ref: String? = nil) -> Self {
        .init(op: "error", channel: channel, ref: ref, code: code, message: message)
    }

    static let pong = Self(op: "pong")

    var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(#"{"op":"error"}"#.utf8), as: UTF8.self)
    }
}

/// The close codes of `/v1/realtime` (README, "Live events").
enum RealtimeCloseCode {
    /// No valid token: none within the authentication timeout, or an invalid one.
    static let unauthorized = WebSocketErrorCode.unknown(4001)
    /// The token expired and no fresh one came.
    static let tokenExpired = WebSocketErrorCode.unknown(4002)
    /// A fresh token for a different user.
    static let userChanged = WebSocketErrorCode.unknown(4003)
    /// The client read too slowly: its buffer filled with events that may not be dropped.
    static let slowClient = WebSocketErrorCode.unknown(4008)
    /// Too many connection attempts from this client, or the gateway is full: reconnect after a
    /// moment (1013, "Try Again Later").
    static let tryAgainLater = WebSocketErrorCode.unknown(1013)
}
