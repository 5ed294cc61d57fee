import Foundation
import LocalStack
import PlainWebSocket
import TestSupport
import Testing

/// The realtime WebSockets' handshake and framing as the gateway's edge serves them (RFC 6455),
/// byte by byte over a plain socket: what a conforming client relies on, and the close code a
/// broken one is told.
@Suite("Realtime WebSocket framing")
struct RealtimeSocketTests {
    /// RFC 6455's own example key, and the accept value it gives (§1.3).
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    static let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    @Test func theHandshakeIsAnsweredAsTheRFCSaysAndAFrameSentWithItIsRead() async throws {
        try await GatewayHarness.with { gateway in
            let connection = try RawHTTPConnection(port: gateway.app.port)
            let auth = Array(#"{"op":"auth","token":"\#(try gateway.token())"}"#.utf8)
            // The upgrade and the first message in one write, as a client in a hurry sends them.
            try await connection.send(bytes: Array(Self.upgrade("/v1/realtime").utf8) + Self.frame(.text, auth))
            let answer = try #require(try await connection.read(1).first)
            #expect(answer.status == 101)
            #expect(answer.headers["upgrade"]?.lowercased() == "websocket")
            #expect(answer.headers["sec-websocket-accept"] == Self.accept)
            let ready = try #require(try await connection.readFrame())
            #expect(ready.opcode == Opcode.text.rawValue)
            #expect(String(decoding: ready.payload, as: UTF8.self).contains(#""op":"ready""#))
        }
    }

    @Test func aBrokenHandshakeIsRefusedWithAProblemAndTheConnectionCloses() async throws {
        try await GatewayHarness.with { gateway in
            let cases: [(request: String, status: Int)] = [
                (Self.upgrade("/v1/realtime", key: nil), 400),
                (Self.upgrade("/realtime/v1/websocket?apikey=k", key: "short"), 400),
                (Self.upgrade("/v1/realtime", version: "8"), 426),
                (Self.upgrade("/v1/realtime").replacingOccurrences(of: "GET ", with: "POST "), 400),
            ]
            for (request, status) in cases {
                let connection = try RawHTTPConnection(port: gateway.app.port)
                try await connection.send(request)
                let (head, body) = try await connection.readToEnd()
                #expect(head.hasPrefix("HTTP/1.1 \(status) "), "\(request)")
                #expect(body.contains(#""status":\#(status)"#) || body.contains(#""code":\#(status)"#), "\(body)")
                if status == 426 { #expect(head.lowercased().contains("sec-websocket-version: 13")) }
            }
        }
    }

    @Test func fragmentsArePutTogetherAndPingsAnsweredWithTheirData() async throws {
        try await GatewayHarness.with { gateway in
            let connection = try await Self.open(gateway)
            try await connection.send(
                bytes: Self.frame(.text, Array(#"{"op":"pi"#.utf8), fin: false) + Self.frame(.continuation, Array(#"ng"}"#.utf8))
            )
            let pong = try await Self.next(.text, from: connection)
            #expect(String(decoding: pong, as: UTF8.self).contains(#""op":"pong""#))
            try await connection.send(bytes: Self.frame(.ping, Array("are you there".utf8)))
            #expect(try await Self.next(.pong, from: connection) == Array("are you there".utf8))
        }
    }

    @Test(arguments: [
        ("an unmasked frame", frame(.text, Array(#"{"op":"ping"}"#.utf8), masked: false), 1002),
        ("text that is not UTF-8", frame(.text, [0x7B, 0xC3, 0x28, 0x7D]), 1007),
        ("a message over 16 KiB", frame(.text, Array(repeating: 0x20, count: 17 << 10)), 1009),
        ("a continuation of nothing", frame(.continuation, Array("x".utf8)), 1002),
        ("a fragmented ping", frame(.ping, [], fin: false), 1002),
    ])
    func aFrameBreakingTheProtocolClosesTheConnectionWithItsCode(what: String, bytes: [UInt8], code: Int) async throws {
        try await GatewayHarness.with { gateway in
            let connection = try await Self.open(gateway)
            try await connection.send(bytes: bytes)
            let close = try await Self.next(.close, from: connection)
            #expect(close.count >= 2 && Int(close[0]) << 8 | Int(close[1]) == code, "\(what)")
            #expect(try await Self.rest(of: connection) == nil, "the connection stays open after \(what)")
        }
    }

    @Test func aClientsCloseIsAnsweredWithItsCodeAndTheConnectionEnds() async throws {
        try await GatewayHarness.with { gateway in
            let connection = try await Self.open(gateway)
            try await connection.send(bytes: Self.frame(.close, [0x03, 0xE8] + Array("done".utf8)))
            let close = try await Self.next(.close, from: connection)
            #expect(Array(close.prefix(2)) == [0x03, 0xE8])
            #expect(try await Self.rest(of: connection) == nil)
            try await waitUntilReady("the disconnect counted", timeout: .seconds(5)) {
                await gateway.countsOneDisconnect("client_closed", transport: "websocket")
            }
        }
    }

    // MARK: The client's side

    typealias Opcode = PlainWebSocketClient.Frame.Opcode

    static func upgrade(_ target: String, version: String = "13", key: String? = key, extra: String = "") -> String {
        "GET \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: \(version)\r\n"
            + (key.map { "Sec-WebSocket-Key: \($0)\r\n" } ?? "") + extra + "\r\n"
    }

    /// A client's frame: masked (as a client's must be) unless `masked` is off.
    static func frame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true, masked: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode.rawValue]
        let mask: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: bytes.append(mask | UInt8(payload.count))
        case ..<65_536: bytes += [mask | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: bytes += [mask | 127] + (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        guard masked else { return bytes + payload }
        let key: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        return bytes + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    /// A `/v1/realtime` connection, authenticated and greeted.
    static func open(_ gateway: GatewayHarness) async throws -> RawHTTPConnection {
        let connection = try RawHTTPConnection(port: gateway.app.port)
        try await connection.send(upgrade("/v1/realtime", extra: "Authorization: Bearer \(try gateway.token())\r\n"))
        #expect(try await connection.read(1).first?.status == 101)
        let ready = try await next(.text, from: connection)
        #expect(String(decoding: ready, as: UTF8.self).contains(#""op":"ready""#))
        return connection
    }

    /// The payload of the next frame of `opcode`, past any others.
    static func next(_ opcode: Opcode, from connection: RawHTTPConnection) async throws -> [UInt8] {
        while let frame = try await connection.readFrame() {
            if frame.opcode == opcode.rawValue { return frame.payload }
        }
        throw RawHTTPError.closed
    }

    /// The next frame after a close: `nil` when the gateway has closed the connection.
    static func rest(of connection: RawHTTPConnection) async throws -> UInt8? {
        try await connection.readFrame()?.opcode
    }
}
