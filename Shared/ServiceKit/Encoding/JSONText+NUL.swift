extension JSONText {
    /// Whether a string in the JSON text `bytes` (a key or a value) holds U+0000, which JSON writes
    /// as `\u0000` and neither Postgres's `text` nor its `jsonb` accepts. An escaped backslash
    /// before `u0000` (`\\u0000`) is those six characters, not a NUL; a raw NUL byte is no JSON
    /// at all and is left to the parser.
    public static func containsNUL(_ bytes: some Sequence<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "\\") else { continue }
            // An escape: `\\`, `\"`, `\n`… are whole once their second character is read.
            guard let escape = iterator.next() else { return false }
            guard escape == UInt8(ascii: "u") else { continue }
            // `\uXXXX`: hex digits follow, so a digit read past the zeros starts nothing.
            var zeros = 0
            while zeros < 4, let digit = iterator.next(), digit == UInt8(ascii: "0") {
                zeros += 1
            }
            if zeros == 4 { return true }
        }
        return false
    }
}
