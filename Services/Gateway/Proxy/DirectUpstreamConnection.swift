import NIOCore

/// What the direct path is told of its upstream connection while it carries an exchange, on the
/// connection's event loop.
protocol DirectUpstreamReceiver: AnyObject {
    func upstreamRead(_ bytes: ByteBuffer)
    func upstreamReadComplete()
    /// The connection closed (`error` is `nil`) or failed.
    func upstreamEnded(_ error: (any Error)?)
}

/// A keep-alive connection to an upstream that the direct path writes requests to and reads
/// answers from as bytes, with no HTTP codec in its pipeline: `DirectProxyHandler` reads what it
/// needs of an answer's head and forwards the rest as it comes.
///
/// While parked it has no receiver: anything the upstream sends then, or its closing, closes it,
/// so an open parked connection can carry the next exchange.
final class DirectUpstreamConnection: PooledConnection {
    let channel: any Channel
    private let handler: NIOLoopBound<DirectUpstreamHandler>

    /// Sets up a new connection's pipeline: the one handler that hands its bytes on.
    static func addHandlers(to pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHandler(DirectUpstreamHandler())
    }

    /// Wraps a channel set up by `addHandlers(to:)`; on the channel's event loop.
    init(adopting channel: any Channel) throws {
        self.channel = channel
        self.handler = NIOLoopBound(try channel.pipeline.syncOperations.handler(type: DirectUpstreamHandler.self), eventLoop: channel.eventLoop)
    }

    var isOpen: Bool { channel.isActive }

    func close() {
        channel.close(promise: nil)
    }

    /// Gives the connection's answers to `receiver` (on the connection's loop) until `detach()`.
    func attach(_ receiver: any DirectUpstreamReceiver) {
        handler.value.receiver = receiver
    }

    func detach() {
        handler.value.receiver = nil
        setReading(true)
    }

    /// Writes and flushes a whole request.
    func send(_ request: ByteBuffer) {
        channel.writeAndFlush(request, promise: nil)
    }

    /// Pauses or resumes reading the upstream's socket (backpressure from a slow client).
    func setReading(_ reading: Bool) {
        handler.value.setReading(reading)
    }
}

private final class DirectUpstreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    var receiver: (any DirectUpstreamReceiver)?
    private var context: ChannelHandlerContext?
    private var reading = true

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func setReading(_ reading: Bool) {
        guard reading != self.reading, let context else { return }
        self.reading = reading
        try? context.channel.syncOptions?.setOption(.autoRead, value: reading)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let receiver else {
            // Nothing was asked of a parked connection: whatever comes is not ours to read.
            context.close(promise: nil)
            return
        }
        receiver.upstreamRead(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        receiver?.upstreamReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let receiver = receiver
        self.receiver = nil
        receiver?.upstreamEnded(nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let receiver = receiver
        self.receiver = nil
        receiver?.upstreamEnded(error)
        context.close(promise: nil)
    }
}

/// Reads an upstream's answer to a GET as it comes: the head, then where its body ends (by
/// `Content-Length`, by chunks, or at the connection's end), so that the body's bytes pass on as
/// they came.
struct AnswerReader {
    /// What the head of an answer says. A class: the proxy's steps each consult it, and a copy of
    /// a struct would retain its bytes and fields each time.
    final class Head {
        let message: MessageHead
        let status: Int
        /// The status line's reason phrase, as it came.
        let reason: Range<Int>
        let body: Body
        /// Whether the connection can carry another exchange after this answer.
        let keepAlive: Bool

        init(message: MessageHead, status: Int, reason: Range<Int>, body: Body, keepAlive: Bool) {
            self.message = message
            self.status = status
            self.reason = reason
            self.body = body
            self.keepAlive = keepAlive
        }

        /// The answer is complete with its head.
        var endsWithHead: Bool { body == .none || body == .length(0) }
    }

    enum Body: Equatable {
        case none
        case length(Int)
        /// Chunked: passed on as it is, chunks and trailers.
        case chunked
        /// Delimited by the connection's end: passed on in chunks.
        case untilClose
    }

    enum Step {
        /// The head is not all here yet.
        case needMore
        case head(Head)
        /// Bytes of the body to pass on, and whether they end it.
        case body(ByteBuffer, ends: Bool)
    }

    enum Failure: Error {
        case malformed
    }

    private var pending = ByteBuffer()
    private var head: Head?
    private var remaining = 0
    private var chunks = ChunkedBodyScanner()

    /// Bytes received past the answer's end: the connection cannot carry another exchange.
    var hasLeftover: Bool { pending.readableBytes > 0 }

    mutating func receive(_ bytes: ByteBuffer) {
        if pending.readableBytes == 0 { pending = bytes } else { var bytes = bytes; pending.writeBuffer(&bytes) }
    }

    /// The next thing to do with what has been received; `nil` when nothing is left for now.
    mutating func next() throws(Failure) -> Step? {
        guard let head else {
            while true {
                switch MessageHead.take(from: &pending) {
                case .incomplete: return .needMore
                case .notPlain: throw .malformed
                case .head(let message):
                    let head = try Self.read(message)
                    // An interim answer (100 Continue, 103 Early Hints) precedes the real one.
                    if (100..<200).contains(head.status) { continue }
                    self.head = head
                    if case .length(let length) = head.body { remaining = length }
                    return .head(head)
                }
            }
        }
        switch head.body {
        case .none:
            return nil
        case .length:
            guard remaining > 0, pending.readableBytes > 0 else { return nil }
            let count = min(remaining, pending.readableBytes)
            remaining -= count
            return .body(pending.readSlice(length: count)!, ends: remaining == 0)
        case .chunked:
            guard pending.readableBytes > 0, !chunks.ended else { return nil }
            let (count, ends) = try chunks.scan(pending)
            return .body(pending.readSlice(length: count)!, ends: ends)
        case .untilClose:
            guard pending.readableBytes > 0 else { return nil }
            return .body(pending.readSlice(length: pending.readableBytes)!, ends: false)
        }
    }

    /// The facts of an answer's head.
    private static func read(_ message: MessageHead) throws(Failure) -> Head {
        // `HTTP/1.x SP 3DIGIT [SP reason]`
        let line = message.withBytes(0..<message.startLineLength) { bytes -> (version: UInt8, status: Int, reason: Range<Int>)? in
            guard bytes.count >= 12, bytes.starts(with: "HTTP/1.".utf8), bytes[8] == .space,
                  let status = MessageHead.decimal(UnsafeRawBufferPointer(rebasing: bytes[9..<12])),
                  bytes.count == 12 || bytes[12] == .space
            else { return nil }
            for byte in bytes.dropFirst(12) where !byte.isFieldValueCharacter { return nil }
            return (bytes[7], status, min(13, bytes.count)..<bytes.count)
        }
        guard let line, line.version == UInt8(ascii: "1") || line.version == UInt8(ascii: "0"), (100...599).contains(line.status), line.status != 101 else {
            throw .malformed
        }
        var keepAlive = line.version == UInt8(ascii: "1") && !message.connectionOptions.contains("close")
        let body: Body
        if line.status < 200 || line.status == 204 || line.status == 304 {
            body = .none
        } else if message.count(.transferEncoding) > 0 {
            // Chunked must come last; any other coding runs to the connection's end.
            body = message.lowercasedList(.transferEncoding).last == "chunked" ? .chunked : .untilClose
            if message.count(.contentLength) > 0 { keepAlive = false }  // RFC 9112 §6.3: a sign of smuggling
        } else {
            switch message.contentLength {
            case .length(let length): body = .length(length)
            case .none: body = .untilClose
            case .invalid: throw .malformed
            }
        }
        if body == .untilClose { keepAlive = false }
        return Head(message: message, status: line.status, reason: line.reason, body: body, keepAlive: keepAlive)
    }
}

/// Finds where a chunked body ends (RFC 9112 §7.1), byte by byte across reads, without changing it.
struct ChunkedBodyScanner {
    private enum State {
        case size(digits: Int)
        case extensions
        case sizeLF
        case data(remaining: Int)
        case dataCR
        case dataLF
        /// At the start of a trailer line, or of the final empty line.
        case trailerStart
        case trailerLine
        case trailerLF
        case finalLF
        case done
    }

    private var state = State.size(digits: 0)
    private var size = 0

    var ended: Bool {
        if case .done = state { true } else { false }
    }

    /// How many of `bytes` belong to the body, and whether they end it.
    mutating func scan(_ bytes: ByteBuffer) throws(AnswerReader.Failure) -> (count: Int, ends: Bool) {
        let result: (Int, Bool)? = bytes.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch state {
                case .size(let digits):
                    if let value = Self.hexValue(byte) {
                        guard digits < 15 else { return nil }
                        size = size * 16 + value
                        state = .size(digits: digits + 1)
                    } else if digits > 0, byte == .cr {
                        state = .sizeLF
                    } else if digits > 0, byte == UInt8(ascii: ";") || byte.isWhitespace {
                        state = .extensions
                    } else {
                        return nil
                    }
                case .extensions:
                    if byte == .cr { state = .sizeLF } else if !byte.isFieldValueCharacter { return nil }
                case .sizeLF:
                    guard byte == .lf else { return nil }
                    state = size == 0 ? .trailerStart : .data(remaining: size)
                    size = 0
                case .data(let remaining):
                    // Skips the rest of the chunk's data at once.
                    let taken = min(remaining, bytes.count - index + 1)
                    index += taken - 1
                    state = remaining == taken ? .dataCR : .data(remaining: remaining - taken)
                case .dataCR:
                    guard byte == .cr else { return nil }
                    state = .dataLF
                case .dataLF:
                    guard byte == .lf else { return nil }
                    state = .size(digits: 0)
                case .trailerStart:
                    state = byte == .cr ? .finalLF : .trailerLine
                    if byte != .cr, !byte.isFieldValueCharacter { return nil }
                case .trailerLine:
                    if byte == .cr { state = .trailerLF } else if !byte.isFieldValueCharacter { return nil }
                case .trailerLF:
                    guard byte == .lf else { return nil }
                    state = .trailerStart
                case .finalLF:
                    guard byte == .lf else { return nil }
                    state = .done
                    return (index, true)
                case .done:
                    return (index - 1, true)
                }
            }
            return (index, false)
        }
        guard let result else { throw .malformed }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
