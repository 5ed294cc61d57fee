import Foundation

/// Splits a SQL script into its statements.
///
/// PostgresNIO speaks only the extended query protocol, which takes one statement at a time, so a
/// migration file is split on the semicolons that end statements: not those inside quoted strings
/// (`'…'`, `E'…'` with backslash escapes), quoted identifiers (`"…"`), dollar-quoted bodies
/// (`$$…$$`, `$fn$…$fn$`) or comments (`-- …`, nested `/* … */`). Statements that are only comments
/// or white space are dropped.
package enum SQLScript {
    package static func statements(in script: String) -> [String] {
        let bytes = Array(script.utf8)
        var statements: [String] = []
        var start = 0
        var index = 0
        var hasCode = false  // whether the current statement has anything but comments and space

        func finishStatement(at end: Int) {
            if hasCode, let text = String(validating: bytes[start..<end], as: UTF8.self) {
                let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
                if !trimmed.isEmpty { statements.append(trimmed) }
            }
            hasCode = false
        }

        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "-") where next(bytes, index) == UInt8(ascii: "-"):
                index = skipLineComment(bytes, from: index)
                continue
            case UInt8(ascii: "/") where next(bytes, index) == UInt8(ascii: "*"):
                index = skipBlockComment(bytes, from: index)
                continue
            case UInt8(ascii: "'"):
                let backslashEscapes =
                    index > 0 && (bytes[index - 1] | 0x20) == UInt8(ascii: "e")
                    && (index < 2 || !isIdentifier(bytes[index - 2]))
                index = skipQuoted(bytes, from: index, quote: UInt8(ascii: "'"), backslashEscapes: backslashEscapes)
                hasCode = true
                continue
            case UInt8(ascii: "\""):
                index = skipQuoted(bytes, from: index, quote: UInt8(ascii: "\""), backslashEscapes: false)
                hasCode = true
                continue
            case UInt8(ascii: "$"):
                if let end = skipDollarQuoted(bytes, from: index) {
                    index = end
                    hasCode = true
                    continue
                }
            case UInt8(ascii: ";"):
                finishStatement(at: index)
                start = index + 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                break
            default:
                hasCode = true
            }
            index += 1
        }
        finishStatement(at: bytes.count)
        return statements
    }

    private static func next(_ bytes: [UInt8], _ index: Int) -> UInt8? {
        index + 1 < bytes.count ? bytes[index + 1] : nil
    }

    private static func isIdentifier(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_") || byte >= 0x80
    }

    private static func skipLineComment(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
        return index
    }

    /// Block comments nest in Postgres.
    private static func skipBlockComment(_ bytes: [UInt8], from start: Int) -> Int {
        var depth = 0
        var index = start
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "/"), next(bytes, index) == UInt8(ascii: "*") {
                depth += 1
                index += 2
            } else if bytes[index] == UInt8(ascii: "*"), next(bytes, index) == UInt8(ascii: "/") {
                depth -= 1
                index += 2
                if depth == 0 { return index }
            } else {
                index += 1
            }
        }
        return index
    }

    /// Skips a quoted string or identifier; a doubled quote is an escaped quote.
    private static func skipQuoted(_ bytes: [UInt8], from start: Int, quote: UInt8, backslashEscapes: Bool) -> Int {
        var index = start + 1
        while index < bytes.count {
            if backslashEscapes, bytes[index] == UInt8(ascii: "\\") {
                index += 2
                continue
            }
            if bytes[index] == quote {
                if next(bytes, index) == quote {
                    index += 2
                    continue
                }
                return index + 1
            }
            index += 1
        }
        return index
    }

    /// Skips `$tag$ … $tag$`; `nil` when the `$` does not open a dollar quote (`$1`, say).
    private static func skipDollarQuoted(_ bytes: [UInt8], from start: Int) -> Int? {
        if start > 0, isIdentifier(bytes[start - 1]) { return nil }  // `a$b` is part of an identifier
        var tagEnd = start + 1
        while tagEnd < bytes.count, bytes[tagEnd] != UInt8(ascii: "$") {
            let byte = bytes[tagEnd]
            let isDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            guard isIdentifier(byte), !(isDigit && tagEnd == start + 1) else { return nil }
            tagEnd += 1
        }
        guard tagEnd < bytes.count else { return nil }
        let tag = bytes[start...tagEnd]
        var index = tagEnd + 1
        while index + tag.count <= bytes.count {
            if bytes[index] == UInt8(ascii: "$"), bytes[index..<(index + tag.count)].elementsEqual(tag) {
                return index + tag.count
            }
            index += 1
        }
        return bytes.count
    }
}
