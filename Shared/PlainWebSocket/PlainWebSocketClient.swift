import Crypto
import Foundation
import NIOCore
import NIOPosix

/// A small RFC 6455 client (tests, benchmarks, the tracking simulator), over a plain NIO socket.
///
/// Ours rather than swift-websocket's `WSClient`: that client loses the frames a server sends in
/// the same TCP read as its `101` response, and then does not see the connection end either. The
/// gateway greets (`ready`) and refuses (close 4001, 4002, 1013) right after the upgrade, so under
/// load a test using it waited forever for a close the server had sent. This client keeps every
/// byte after the handshake's blank line and parses it as frames.
package enum PlainWebSocketClient {
    /// The close frame the server sent: its status code (none when the frame had no body) and reason.
    package struct CloseFrame: Sendable, Equatable {
        package var code: UInt16?
        package var reason: String

        package init(code: UInt16?, reason: String) {
            self.code = code
            self.reason = reason
        }
    }

    package enum Failure: Error, CustomStringConvertible {
        case badURL(String)
        case handshake(String)
        case protocolViolation(String)

        package var description: String {
            switch self {
            case .badURL(let url): "not a ws:// URL: \(url)"
            case .handshake(let detail): "WebSocket handshake failed: \(detail)"
            case .protocolViolation(let detail): "WebSocket protocol violation: \(detail)"
            }
        }
    }

    /// Sends the client's frames (masked, as RFC 6455 requires of clients).
    package struct Writer: Sendable {
        fileprivate let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

        package func send(text: String) async throws {
            try await outbound.write(Frame.encode(opcode: .text, payload: Array(text.utf8)))
        }

        package func send(binary: [UInt8]) async throws {
            try await outbound.write(Frame.encode(opcode: .binary, payload: binary))
        }

        /// Starts the closing handshake; the server answers with its close frame.
        package func close(code: UInt16 = 1000, reason: String = "") async throws {
            try await outbound.write(Frame.encode(opcode: .close, payload: Frame.closeBody(code: code, reason: reason)))
        }
    }

    /// Connects to `url`, hands the writer to `onOpen` once upgraded, and calls `onText` with each
    /// text message (and `onBinary` with each binary one) until the server closes. With `reads` false the client never reads after the
    /// handshake (a slow client: the socket's buffers fill up) until its task is cancelled.
    /// - Returns: the server's close frame, or nil when the connection ended without one.
    package static func run(
        url: String,
        headers: [(String, String)] = [],
        reads: Bool = true,
        onOpen: @Sendable (Writer) -> Void = { _ in },
        onBinary: @Sendable ([UInt8]) -> Void = { _ in },
        onText: @Sendable (String) -> Void
    ) async throws -> CloseFrame? {
        guard let parsed = URL(string: url), parsed.scheme == "ws", let host = parsed.host, let port = parsed.port else {
            throw Failure.badURL(url)
        }
        let target = parsed.path.isEmpty ? "/" : parsed.path + (parsed.query.map { "?\($0)" } ?? "")
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        // Cancelling the caller closes the socket, which ends any read in progress.
        let closer = channel.channel
        return try await withTaskCancellationHandler {
            try await channel.executeThenClose { inbound, outbound in
                var reader = Reader(iterator: inbound.makeAsyncIterator())
                let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
                try await outbound.write(handshake(host: host, port: port, target: target, key: key, headers: headers))
                try await reader.readHandshake(key: key)
                let writer = Writer(outbound: outbound)
                onOpen(writer)
                guard reads else {
                    try await Task.sleep(for: .seconds(3_600))
                    return nil
                }
                var fragments: [UInt8] = []
                var binary = false
                while let frame = try await reader.nextFrame() {
                    switch frame.opcode {
                    case .text, .binary, .continuation:
                        if frame.opcode != .continuation { binary = frame.opcode == .binary }
                        fragments += frame.payload
                        if frame.fin {
                            if binary { onBinary(fragments) } else { onText(String(decoding: fragments, as: UTF8.self)) }
                            fragments.removeAll(keepingCapacity: true)
                        }
                    case .pong:
                        continue
                    case .ping:
                        try await outbound.write(Frame.encode(opcode: .pong, payload: frame.payload))
                    case .close:
                        let close = Frame.parseClose(frame.payload)
                        // Answer with the same code, as RFC 6455 §5.5.1 asks; the server then ends
                        // the connection.
                        try? await outbound.write(
                            Frame.encode(opcode: .close, payload: close.code.map { Frame.closeBody(code: $0, reason: "") } ?? [])
                        )
                        return close
                    }
                }
                return nil
            }
        } onCancel: {
            closer.close(promise: nil)
        }
    }

    /// The `Sec-WebSocket-Accept` a server answers `Sec-WebSocket-Key: key` with (RFC 6455 §4.2.2).
    package static func acceptValue(for key: String) -> String {
        Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    private static func handshake(host: String, port: Int, target: String, key: String, headers: [(String, String)]) -> ByteBuffer {
        var request = "GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        return ByteBuffer(string: request)
    }

    /// The inbound bytes: the handshake response, then frames. Bytes that arrive with the response
    /// stay in `buffer` for the frames.
    private struct Reader {
        var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        var buffer = ByteBuffer()

        /// Reads more bytes; false at the end of the connection.
        private mutating func fill() async throws -> Bool {
            guard var more = try await iterator.next() else { return false }
            buffer.writeBuffer(&more)
            return true
        }

        mutating func readHandshake(key: String) async throws {
            let end = Array("\r\n\r\n".utf8)
            while true {
                let bytes = buffer.readableBytesView
                if let range = bytes.firstRange(of: end) {
                    let length = range.upperBound - bytes.startIndex
                    let head = buffer.readString(length: length) ?? ""
                    try Self.check(head, key: key)
                    return
                }
                guard buffer.readableBytes < 16 << 10 else { throw Failure.handshake("response head over 16 KB") }
                guard try await fill() else { throw Failure.handshake("connection closed during the handshake") }
            }
        }

        private static func check(_ head: String, key: String) throws {
            let lines = head.components(separatedBy: "\r\n")
            guard let status = lines.first, status.hasPrefix("HTTP/1.1 101") else {
                throw Failure.handshake("status line \(lines.first ?? "")")
            }
            let expected = PlainWebSocketClient.acceptValue(for: key)
            let accept = lines.dropFirst().first { $0.lowercased().hasPrefix("sec-websocket-accept:") }
                .map { $0.dropFirst("sec-websocket-accept:".count).trimmingCharacters(in: .whitespaces) }
            guard accept == expected else { throw Failure.handshake("Sec-WebSocket-Accept \(accept ?? "missing")") }
        }

        /// The next whole frame; nil at the end of the connection.
        mutating func nextFrame() async throws -> Frame? {
            while true {
                if let frame = try Frame.parse(from: &buffer) { return frame }
                guard try await fill() else { return nil }
            }
        }
    }

    package struct Frame {
        /// A frame's kind, as RFC 6455 numbers it.
        package enum Opcode: UInt8 {
            case continuation = 0x0
            case text = 0x1
            case binary = 0x2
            case close = 0x8
            case ping = 0x9
            case pong = 0xA
        }

        var fin: Bool
        var opcode: Opcode
        var payload: [UInt8]

        /// Takes one frame off the front of `buffer`, or nothing when it is not all there yet.
        static func parse(from buffer: inout ByteBuffer) throws -> Frame? {
            var view = buffer
            guard let first = view.readInteger(as: UInt8.self), let second = view.readInteger(as: UInt8.self) else { return nil }
            guard let opcode = Opcode(rawValue: first & 0x0F) else { throw Failure.protocolViolation("opcode \(first & 0x0F)") }
            guard second & 0x80 == 0 else { throw Failure.protocolViolation("a masked frame from the server") }
            var length = UInt64(second & 0x7F)
            if length == 126 {
                guard let extended = view.readInteger(as: UInt16.self) else { return nil }
                length = UInt64(extended)
            } else if length == 127 {
                guard let extended = view.readInteger(as: UInt64.self) else { return nil }
                length = extended
            }
            guard length <= 16 << 20 else { throw Failure.protocolViolation("a \(length)-byte frame") }
            guard let payload = view.readBytes(length: Int(length)) else { return nil }
            buffer = view
            return Frame(fin: first & 0x80 != 0, opcode: opcode, payload: payload)
        }

        static func encode(opcode: Opcode, payload: [UInt8]) -> ByteBuffer {
            var buffer = ByteBuffer()
            buffer.writeInteger(0x80 | opcode.rawValue)
            switch payload.count {
            case ..<126:
                buffer.writeInteger(0x80 | UInt8(payload.count))
            case ..<65_536:
                buffer.writeInteger(UInt8(0x80 | 126))
                buffer.writeInteger(UInt16(payload.count))
            default:
                buffer.writeInteger(UInt8(0x80 | 127))
                buffer.writeInteger(UInt64(payload.count))
            }
            let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
            buffer.writeBytes(mask)
            buffer.writeBytes(payload.enumerated().map { $0.element ^ mask[$0.offset & 3] })
            return buffer
        }

        static func closeBody(code: UInt16, reason: String) -> [UInt8] {
            [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)
        }

        static func parseClose(_ payload: [UInt8]) -> CloseFrame {
            guard payload.count >= 2 else { return CloseFrame(code: nil, reason: "") }
            return CloseFrame(code: UInt16(payload[0]) << 8 | UInt16(payload[1]), reason: String(decoding: payload.dropFirst(2), as: UTF8.self))
        }
    }
}
