/// Query strings as PostgREST reads them (`application/x-www-form-urlencoded`): pairs split on
/// `&` and the first `=`, `+` is a space, `%XX` a byte; the bytes are UTF-8.
package enum FormDecoding {
    /// The decoded pairs of `query` (without its `?`), in order; empty pieces are skipped.
    /// - Throws: PGRST100 for a broken `%` escape or bytes that are not UTF-8.
    package static func pairs(_ query: String) throws(DataAPIError) -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        for piece in query.utf8.split(separator: UInt8(ascii: "&")) {
            let name: Substring.UTF8View
            let value: Substring.UTF8View
            if let equals = piece.firstIndex(of: UInt8(ascii: "=")) {
                name = piece[..<equals]
                value = piece[piece.index(after: equals)...]
            } else {
                name = piece
                value = piece[piece.endIndex...]
            }
            pairs.append((try decode(name), try decode(value)))
        }
        return pairs
    }

    private static func decode(_ bytes: Substring.UTF8View) throws(DataAPIError) -> String {
        // Most names and values need no decoding at all.
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) {
            return String(Substring(bytes))
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                let high = bytes.index(after: index)
                guard high != bytes.endIndex, let upper = hexValue(bytes[high]) else { throw broken(bytes) }
                let low = bytes.index(after: high)
                guard low != bytes.endIndex, let lower = hexValue(bytes[low]) else { throw broken(bytes) }
                out.append(upper << 4 | lower)
                index = low
            } else {
                out.append(byte)
            }
            index = bytes.index(after: index)
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw broken(bytes) }
        return text
    }

    private static func broken(_ bytes: Substring.UTF8View) -> DataAPIError {
        .badQuery(
            "\"failed to parse query string\" (line 1, column 1)",
            details: "Bad percent-encoding in \(String(decoding: bytes.prefix(100), as: UTF8.self))"
        )
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static let digits = Array("0123456789ABCDEF".utf8)

    /// `text` percent-encoded: letters, digits and `-_.~,():*` stay, everything else is `%XX`.
    package static func encode(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: ","),
                UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ":"), UInt8(ascii: "*"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte & 0xF)]))
            }
        }
        return out
    }
}
