import Foundation

/// A value that writes its JSON itself, byte for byte what `EventJSON.encoder` (and `JSONBody`'s
/// encoder, alike) would write — keys sorted, slashes unescaped, RFC 3339 dates with milliseconds,
/// UUIDs in lower case — but without the encoder's intermediate tree: for the few bodies and
/// events made at high rates (a feed page, driver positions). A test per type holds the two
/// outputs equal.
package protocol JSONWritable: Encodable {
    func write(to writer: inout JSONWriter)
}

extension JSONWritable {
    /// The value's JSON.
    package var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        write(to: &writer)
        return writer.bytes
    }
}

/// Writes JSON into a byte buffer. Objects are written by the caller key by key, in sorted order.
package struct JSONWriter: Sendable {
    package private(set) var bytes: [UInt8] = []
    private var needsComma = false

    package init(capacity: Int = 1_024) {
        bytes.reserveCapacity(capacity)
    }

    package mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    package mutating func array<Element>(_ elements: some Sequence<Element>, _ body: (inout JSONWriter, Element) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for element in elements { body(&self, element) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A key of the object being written; its value follows.
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        needsComma = false
    }

    /// A key that is not known in advance (a free-form object's); its value follows. The caller
    /// writes keys in the order `JSONEncoder`'s `sortedKeys` does.
    package mutating func key(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A value that is JSON text already (a payload read whole), as it is.
    package mutating func json(_ text: some Collection<UInt8>) {
        separate()
        bytes.append(contentsOf: text)
        needsComma = true
    }

    package mutating func string(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    package mutating func string(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    package mutating func integer(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    /// A finite number as `JSONEncoder` writes it: Swift's shortest form, without a trailing `.0`.
    package mutating func number(_ value: Double) {
        separate()
        let text = value.description
        bytes.append(contentsOf: text.hasSuffix(".0") ? text.utf8.dropLast(2) : text.utf8[...])
        needsComma = true
    }

    /// A UUID in lower case (RFC 9562's form, as every Splash payload writes it).
    package mutating func uuid(_ value: UUID) {
        separate()
        let hex: StaticString = "0123456789abcdef"
        bytes.append(UInt8(ascii: "\""))
        withUnsafeBytes(of: value.uuid) { raw in
            hex.withUTF8Buffer { digits in
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
                    bytes.append(digits[Int(byte >> 4)])
                    bytes.append(digits[Int(byte & 0x0F)])
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    package mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    package mutating func date(_ value: Date?) {
        guard let value else { return null() }
        string(EventJSON.formatTimestamp(value))
    }

    package mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
