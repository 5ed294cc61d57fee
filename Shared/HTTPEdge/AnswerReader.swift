import NIOCore

/// Reads an upstream's answer as it comes: the head, then where its body ends (by
/// `Content-Length`, by chunks, or at the connection's end; an answer to `HEAD` has none,
/// whatever its head declares), so that the body's bytes pass on as they came.
package struct AnswerReader {
    /// What the head of an answer says. A class: the proxy's steps each consult it, and a copy of
    /// a struct would retain its bytes and fields each time.
    package final class Head {
        package let message: MessageHead
        package let status: Int
        /// The status line's reason phrase, as it came.
        package let reason: Range<Int>
        /// How the body that follows is delimited.
        package let body: Body
        /// How the head says a body is delimited: `body`, except in an answer to `HEAD`, which
        /// declares the body a `GET` would have had.
        package let declared: Body
        /// Whether the connection can carry another exchange after this answer.
        package let keepAlive: Bool

        package init(message: MessageHead, status: Int, reason: Range<Int>, body: Body, declared: Body, keepAlive: Bool) {
            self.message = message
            self.status = status
            self.reason = reason
            self.body = body
            self.declared = declared
            self.keepAlive = keepAlive
        }

        /// The answer is complete with its head.
        package var endsWithHead: Bool { body == .none || body == .length(0) }
    }

    package enum Body: Equatable {
        case none
        case length(Int)
        /// Chunked: passed on as it is, chunks and trailers.
        case chunked
        /// Delimited by the connection's end: passed on in chunks.
        case untilClose
    }

    package enum Step {
        /// The head is not all here yet.
        case needMore
        case head(Head)
        /// Bytes of the body to pass on, and whether they end it.
        case body(ByteBuffer, ends: Bool)
    }

    package enum Failure: Error {
        case malformed
    }

    /// The request was a `HEAD`.
    private let toHEAD: Bool
    private var pending = ByteBuffer()
    private var head: Head?
    private var remaining = 0
    private var chunks = ChunkedBodyScanner()

    package init(toHEAD: Bool = false) {
        self.toHEAD = toHEAD
    }

    /// Bytes received past the answer's end: the connection cannot carry another exchange.
    package var hasLeftover: Bool { pending.readableBytes > 0 }

    package mutating func receive(_ bytes: ByteBuffer) {
        if pending.readableBytes == 0 {
            pending = bytes
        } else {
            var bytes = bytes
            pending.writeBuffer(&bytes)
        }
    }

    /// The next thing to do with what has been received; `nil` when nothing is left for now.
    package mutating func next() throws(Failure) -> Step? {
        guard let head else {
            while true {
                switch MessageHead.take(from: &pending) {
                case .incomplete: return .needMore
                case .notPlain, .tooLarge: throw .malformed
                case .head(let message):
                    let head = try Self.read(message, toHEAD: toHEAD)
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
            let scan = try chunks.scan(pending)
            return .body(pending.readSlice(length: scan.count)!, ends: scan.ends)
        case .untilClose:
            guard pending.readableBytes > 0 else { return nil }
            return .body(pending.readSlice(length: pending.readableBytes)!, ends: false)
        }
    }

    /// The facts of an answer's head.
    private static func read(_ message: MessageHead, toHEAD: Bool) throws(Failure) -> Head {
        // `HTTP/1.x SP 3DIGIT [SP reason]`
        let line = message.withBytes(0..<message.startLineLength) { bytes -> (version: UInt8, status: Int, reason: Range<Int>)? in
            guard bytes.count >= 12, bytes.starts(with: "HTTP/1.".utf8), bytes[8] == .space,
                let status = MessageHead.decimal(UnsafeRawBufferPointer(rebasing: bytes[9..<12])),
                bytes.count == 12 || bytes[12] == .space
            else { return nil }
            for byte in bytes.dropFirst(12) where !byte.isFieldValueCharacter { return nil }
            return (bytes[7], status, min(13, bytes.count)..<bytes.count)
        }
        guard let line, line.version == UInt8(ascii: "1") || line.version == UInt8(ascii: "0"), (100...599).contains(line.status), line.status != 101
        else {
            throw .malformed
        }
        var keepAlive = line.version == UInt8(ascii: "1") && !message.lists(.connection, "close")
        let body: Body
        if line.status < 200 || line.status == 204 || line.status == 304 {
            body = .none
        } else if message.count(.transferEncoding) > 0 {
            // Chunked must come last; any other coding runs to the connection's end.
            body = message.listEnds(.transferEncoding, with: "chunked") ? .chunked : .untilClose
            if message.count(.contentLength) > 0 { keepAlive = false }  // RFC 9112 §6.3: a sign of smuggling
        } else {
            switch message.contentLength {
            case .length(let length): body = .length(length)
            case .none: body = .untilClose
            case .invalid: throw .malformed
            }
        }
        if toHEAD {
            return Head(message: message, status: line.status, reason: line.reason, body: .none, declared: body, keepAlive: keepAlive)
        }
        if body == .untilClose { keepAlive = false }
        return Head(message: message, status: line.status, reason: line.reason, body: body, declared: body, keepAlive: keepAlive)
    }
}
