import NIOCore

/// Finds where a chunked body ends (RFC 9112 §7.1), byte by byte across reads, without changing it.
package struct ChunkedBodyScanner {
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

    package init() {}

    package var ended: Bool {
        if case .done = state { true } else { false }
    }

    /// What `scan` found in the bytes it was given.
    package struct Scan {
        /// How many of the bytes belong to the body.
        package var count: Int
        /// Whether they end it.
        package var ends: Bool
        /// How many of them are chunk data (the body's content, without the framing).
        package var data: Int
    }

    /// How much of `bytes` belongs to the body, and whether it ends there; `onData` is given the
    /// ranges of chunk data among them (offsets from the first readable byte), in order.
    package mutating func scan(_ bytes: ByteBuffer, onData: (Range<Int>) -> Void = { _ in }) throws(AnswerReader.Failure) -> Scan {
        var data = 0
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
                    onData((index - 1)..<(index - 1 + taken))
                    data += taken
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
        return Scan(count: result.0, ends: result.1, data: data)
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
