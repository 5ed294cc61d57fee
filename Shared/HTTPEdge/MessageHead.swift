import Foundation
import NIOCore

/// The head of an HTTP/1.1 message (start line and header fields) as the bytes that came, with
/// where each part lies: the gateway's proxy reads what it needs from it and forwards the rest as
/// it is, with no header objects made.
///
/// The grammar accepted is RFC 9112's, strictly: `CRLF` line ends, token field names with no space
/// before the colon, field values of visible characters, spaces and tabs (obs-text included), no
/// line folding. Anything else is `notPlain`: a client's such request is refused with a 400 (RFC
/// 9112 lets a server refuse what the looser readings accept, and two readings of one request
/// are how requests are smuggled), an upstream's such answer is a 502.
package struct MessageHead {
    /// The head's bytes, from the start line to the empty line that ends it.
    package let bytes: ByteBuffer
    package let fields: [Field]
    /// The start line without its `CRLF`: `0..<startLineLength`.
    package let startLineLength: Int

    package struct Field {
        package var kind: FieldKind
        package var name: Range<Int>
        /// Without the whitespace around it.
        package var value: Range<Int>
        /// The whole line with its `CRLF`.
        package var line: Range<Int>
    }

    package enum Parse {
        case head(MessageHead)
        /// No end of the head yet.
        case incomplete
        /// Not a head in the grammar above.
        case notPlain
        /// A head, or what has come of one, longer than `maximumSize`.
        case tooLarge
    }

    /// The longest head read; a longer one is refused (431). SwiftNIO's parser, which the
    /// services behind read with, takes as much (a PostgREST filter `in.(…)` of thousands of
    /// values makes a URL of tens of kilobytes).
    package static let maximumSize = 80 << 10

    /// The head at the start of `buffer`'s readable bytes, which it takes from `buffer` when whole.
    package static func take(from buffer: inout ByteBuffer) -> Parse {
        let located: Result<(length: Int, fields: [Field], startLine: Int), Failure>? = buffer.withUnsafeReadableBytes { bytes in
            guard let end = endOfHead(in: bytes) else {
                return bytes.count > maximumSize ? .failure(.tooLarge) : nil
            }
            guard end <= maximumSize else { return .failure(.tooLarge) }
            guard let (fields, startLine) = parseLines(bytes, upTo: end) else { return .failure(.notPlain) }
            return .success((end, fields, startLine))
        }
        switch located {
        case nil: return .incomplete
        case .failure(.notPlain): return .notPlain
        case .failure(.tooLarge): return .tooLarge
        case .success(let found):
            return .head(MessageHead(bytes: buffer.readSlice(length: found.length)!, fields: found.fields, startLineLength: found.startLine))
        }
    }

    private enum Failure: Error {
        case notPlain, tooLarge
    }

    /// The offset just past the empty line that ends the head, if it has come.
    private static func endOfHead(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var index = 3
        while index < bytes.count {
            // Steps of 4 over bytes that cannot end a `CRLFCRLF`.
            let byte = bytes[index]
            if byte == .lf {
                if bytes[index - 1] == .cr, bytes[index - 2] == .lf, bytes[index - 3] == .cr { return index + 1 }
                index += 1
            } else if byte == .cr {
                index += 1
            } else {
                index += 4
            }
        }
        return nil
    }

    /// The fields of the head `bytes[0..<end]`, and the length of its start line; `nil` when a
    /// line breaks the grammar.
    private static func parseLines(_ bytes: UnsafeRawBufferPointer, upTo end: Int) -> ([Field], Int)? {
        var fields: [Field] = []
        fields.reserveCapacity(16)
        var lineStart = 0
        var startLine = -1
        while lineStart < end - 2 {
            var index = lineStart
            while bytes[index] != .cr { index += 1 }
            guard bytes[index + 1] == .lf else { return nil }  // a bare CR
            if startLine < 0 {
                // The start line is checked by the request's or the answer's own reading.
                for position in lineStart..<index where bytes[position] == .lf { return nil }
                startLine = index
            } else {
                guard let field = parseField(bytes, lineStart, index) else { return nil }
                fields.append(field)
            }
            lineStart = index + 2
        }
        return startLine < 0 ? nil : (fields, startLine)
    }

    private static func parseField(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ crlf: Int) -> Field? {
        var index = start
        while index < crlf, bytes[index].isTokenCharacter { index += 1 }
        guard index > start, index < crlf, bytes[index] == .colon else { return nil }
        let name = start..<index
        index += 1
        while index < crlf, bytes[index].isWhitespace { index += 1 }
        var valueEnd = crlf
        while valueEnd > index, bytes[valueEnd - 1].isWhitespace { valueEnd -= 1 }
        for position in index..<valueEnd where !bytes[position].isFieldValueCharacter { return nil }
        return Field(kind: FieldKind(UnsafeRawBufferPointer(rebasing: bytes[name])), name: name, value: index..<valueEnd, line: start..<(crlf + 2))
    }

    // MARK: Reading

    package func withBytes<Result>(_ range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        bytes.withUnsafeReadableBytes { body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    package func string(_ range: Range<Int>) -> String {
        withBytes(range) { String(decoding: $0, as: UTF8.self) }
    }

    /// The values of the fields of `kind` as one, comma-separated (as `HTTPFields` combines them).
    package func combined(_ kind: FieldKind) -> String? {
        var combined: String?
        for field in fields where field.kind == kind {
            let value = string(field.value)
            combined = combined.map { "\($0), \(value)" } ?? value
        }
        return combined
    }

    /// The values of the fields named `name` (lowercase), as one: for fields without a kind of
    /// their own (`Sec-WebSocket-Key`), read once per connection at most.
    package func combined(named name: StaticString) -> String? {
        var combined: String?
        for field in fields where field.kind == .other && withBytes(field.name, { $0.equalsIgnoringCase(name) }) {
            let value = string(field.value)
            combined = combined.map { "\($0), \(value)" } ?? value
        }
        return combined
    }

    package func count(_ kind: FieldKind) -> Int {
        fields.reduce(0) { $0 + ($1.kind == kind ? 1 : 0) }
    }

    /// Whether the comma-separated lists in the fields of `kind` have `element` (lowercase), in
    /// any case: `Connection: keep-alive, Close` lists `close`.
    package func lists(_ kind: FieldKind, _ element: StaticString) -> Bool {
        var found = false
        forEachListElement(of: kind) { found = found || $0.equalsIgnoringCase(element) }
        return found
    }

    /// Whether the last element of the lists in the fields of `kind` is `element` (lowercase), in
    /// any case: `Transfer-Encoding: gzip, Chunked` ends with `chunked`.
    package func listEnds(_ kind: FieldKind, with element: StaticString) -> Bool {
        var last = false
        forEachListElement(of: kind) { last = $0.equalsIgnoringCase(element) }
        return last
    }

    /// Calls `body` with each element of the comma-separated lists in the fields of `kind`, in
    /// order, without the whitespace around it; empty elements are skipped (RFC 9110 §5.6.1). Read
    /// in place: every proxied answer's `Connection` is read, and strings would cost more than
    /// the rest of its head.
    package func forEachListElement(of kind: FieldKind, _ body: (UnsafeRawBufferPointer) -> Void) {
        bytes.withUnsafeReadableBytes { bytes in
            for field in fields where field.kind == kind {
                var start = field.value.lowerBound
                while start < field.value.upperBound {
                    var end = start
                    while end < field.value.upperBound, bytes[end] != UInt8(ascii: ",") { end += 1 }
                    var first = start
                    var last = end
                    while first < last, bytes[first].isWhitespace { first += 1 }
                    while last > first, bytes[last - 1].isWhitespace { last -= 1 }
                    if first < last { body(UnsafeRawBufferPointer(rebasing: bytes[first..<last])) }
                    start = end + 1
                }
            }
        }
    }

    /// The single `Content-Length` of the head: `nil` with none, `.invalid` with several or one
    /// that is not a number.
    package var contentLength: ContentLength {
        var found: Int?
        for field in fields where field.kind == .contentLength {
            guard found == nil, let length = withBytes(field.value, { Self.decimal($0) }) else { return .invalid }
            found = length
        }
        return found.map(ContentLength.length) ?? .none
    }

    package enum ContentLength: Equatable {
        case none
        case length(Int)
        case invalid
    }

    package static func decimal(_ digits: UnsafeRawBufferPointer) -> Int? {
        guard (1...18).contains(digits.count) else { return nil }
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }

    /// Writes the lines of its end-to-end fields as they came: not hop-by-hop, not named by
    /// `Connection` (fields for this hop only), and not of the kinds in `dropping` (those the
    /// gateway sets itself).
    package func writeEndToEndFields(to buffer: inout ByteBuffer, dropping: [FieldKind]) {
        let namesFields = fields.contains { $0.kind == .connection }
        writeFields(to: &buffer) { field in
            guard !field.kind.isHopByHop, !dropping.contains(field.kind) else { return false }
            return !namesFields || !isNamedByConnection(field)
        }
    }

    private func isNamedByConnection(_ field: Field) -> Bool {
        withBytes(field.name) { name in
            var named = false
            forEachListElement(of: .connection) { named = named || $0.equalsIgnoringCase(name) }
            return named
        }
    }

    private func writeFields(to buffer: inout ByteBuffer, where keep: (Field) -> Bool) {
        bytes.withUnsafeReadableBytes { bytes in
            for field in fields where keep(field) {
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[field.line]))
            }
        }
    }
}

extension UnsafeRawBufferPointer {
    /// Whether the bytes are `other`'s, ASCII letters in any case.
    package func equalsIgnoringCase(_ other: UnsafeRawBufferPointer) -> Bool {
        count == other.count && zip(self, other).allSatisfy { $0.asciiLowercased == $1.asciiLowercased }
    }

    /// Whether the bytes are `lowercase`'s, ASCII letters in any case.
    package func equalsIgnoringCase(_ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { equalsIgnoringCase(UnsafeRawBufferPointer($0)) }
    }
}

/// The header fields the gateway reads or changes, told apart once while a head is parsed.
package enum FieldKind: Equatable {
    case accessControlRequestHeaders, accessControlRequestMethod, apiKey
    case authorization, connection, contentLength, date, expect, host, keepAlive, origin
    case proxyAuthenticate, proxyAuthorization, proxyConnection, server, te, trailer
    case transferEncoding, upgrade, xForwardedFor, xForwardedHost, xForwardedProto, xRequestID
    case xSupabaseAPIVersion
    case other

    private static let names: [(String, FieldKind)] = [
        ("access-control-request-headers", .accessControlRequestHeaders), ("access-control-request-method", .accessControlRequestMethod),
        ("apikey", .apiKey),
        ("authorization", .authorization), ("connection", .connection), ("content-length", .contentLength),
        ("date", .date), ("expect", .expect), ("host", .host), ("keep-alive", .keepAlive), ("origin", .origin),
        ("proxy-authenticate", .proxyAuthenticate), ("proxy-authorization", .proxyAuthorization),
        ("proxy-connection", .proxyConnection), ("server", .server), ("te", .te), ("trailer", .trailer),
        ("transfer-encoding", .transferEncoding), ("upgrade", .upgrade), ("x-forwarded-for", .xForwardedFor),
        ("x-forwarded-host", .xForwardedHost), ("x-forwarded-proto", .xForwardedProto), ("x-request-id", .xRequestID),
        ("x-supabase-api-version", .xSupabaseAPIVersion),
    ]
    /// The known names as lowercase bytes, at the index of their length (an array, not a
    /// dictionary: every field of every proxied head is looked up, and this spares the hashing).
    private static let byLength: [[([UInt8], FieldKind)]] = {
        var table = [[([UInt8], FieldKind)]](repeating: [], count: names.map(\.0.utf8.count).max()! + 1)
        for (name, kind) in names { table[name.utf8.count].append((Array(name.utf8), kind)) }
        return table
    }()

    package init(_ name: UnsafeRawBufferPointer) {
        self = .other
        guard name.count < Self.byLength.count else { return }
        for (known, kind) in Self.byLength[name.count] where zip(name, known).allSatisfy({ $0.asciiLowercased == $1 }) {
            self = kind
            return
        }
    }

    /// Hop-by-hop fields (RFC 9110 §7.6.1), and those the next hop gets afresh (`Host`,
    /// `Content-Length`): what `ForwardedHeaders.hopByHop` names, as kinds.
    package var isHopByHop: Bool {
        switch self {
        case .connection, .keepAlive, .proxyConnection, .te, .trailer, .transferEncoding, .upgrade,
            .proxyAuthenticate, .proxyAuthorization, .host, .contentLength:
            true
        default: false
        }
    }
}

extension UInt8 {
    package static let cr = UInt8(ascii: "\r")
    package static let lf = UInt8(ascii: "\n")
    package static let colon = UInt8(ascii: ":")
    package static let space = UInt8(ascii: " ")

    package var isWhitespace: Bool { self == .space || self == UInt8(ascii: "\t") }

    /// The byte with ASCII's capitals made small, every other byte as it is.
    package var asciiLowercased: UInt8 { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) ? self | 0x20 : self }

    /// `tchar` of RFC 9110 §5.6.2.
    package var isTokenCharacter: Bool {
        switch self {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// A field value's characters: visible ones, obs-text, space and tab (RFC 9110 §5.5).
    package var isFieldValueCharacter: Bool {
        self == UInt8(ascii: "\t") || (self >= 0x20 && self != 0x7F)
    }
}
