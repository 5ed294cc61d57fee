import Contracts
import Foundation
import RoadNetwork

/// One point a driver's phone sends.
package struct PositionReport: Sendable, Equatable {
    package var coordinate: Coordinate
    package var heading: Double?
    package var speedMps: Double?
    package var accuracyM: Double?
    package var recordedAt: Date

    package init(coordinate: Coordinate, heading: Double?, speedMps: Double?, accuracyM: Double?, recordedAt: Date) {
        self.coordinate = coordinate
        self.heading = heading
        self.speedMps = speedMps
        self.accuracyM = accuracyM
        self.recordedAt = recordedAt
    }
}

/// Reads a batch of positions as a driver's phone sends it — a JSON array of 1–100 objects
/// `{lat, lng, heading?, speedMps?, accuracyM?, recordedAt}` — in one pass over the bytes, with
/// no tree of values in between: the hot path of tracking (a batch every second from every
/// driver). What it accepts and refuses is what reading the body as JSON and each point with
/// `JSONObject` would (a test holds the two alike over generated batches): any JSON is read,
/// unknown keys are skipped, `null` is an absent value, a repeated key's first value counts. It
/// is strict where `JSONDecoder` is lenient past RFC 8259 (a comma before `}`, a number `1.e`):
/// such a body is a 422.
package enum PositionBatch {
    package static let maxCount = 100

    /// The body is not a JSON array of 1 to `maxCount` values.
    package struct NotABatch: Error {}

    /// Each point, or nil with the names of its bad fields (in the order lat, lng, heading,
    /// speedMps, accuracyM, recordedAt; an element that is not an object is a bad `lat`).
    package static func read(_ bytes: [UInt8]) throws(NotABatch) -> (points: [PositionReport?], badFields: [[String]]) {
        do {
            return try bytes.withUnsafeBufferPointer { buffer throws(Malformed) in
                var reader = Reader(bytes: buffer)
                let batch = try reader.batch()
                reader.skipWhitespace()
                guard reader.atEnd else { throw Malformed() }
                return batch
            }
        } catch {
            throw NotABatch()
        }
    }

    private struct Malformed: Error {}

    /// A field's value, as far as a point cares.
    private enum Value {
        case number(Double)
        case string(String)
        /// `true`, `false`, an array or an object: never a valid value for a point's field.
        case other
    }

    private struct Reader {
        package let bytes: UnsafeBufferPointer<UInt8>
        package var index = 0

        package var atEnd: Bool { index == bytes.count }

        package mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        package mutating func expect(_ byte: UInt8) throws(Malformed) {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else { throw Malformed() }
            index += 1
        }

        package mutating func peek() throws(Malformed) -> UInt8 {
            skipWhitespace()
            guard index < bytes.count else { throw Malformed() }
            return bytes[index]
        }

        package mutating func batch() throws(Malformed) -> ([PositionReport?], [[String]]) {
            try expect(UInt8(ascii: "["))
            var points: [PositionReport?] = []
            var bad: [[String]] = []
            if try peek() == UInt8(ascii: "]") { throw Malformed() }  // an empty batch
            while true {
                guard points.count < PositionBatch.maxCount else { throw Malformed() }
                let (point, fields) = try element()
                points.append(point)
                bad.append(fields)
                let next = try peek()
                index += 1
                if next == UInt8(ascii: "]") { return (points, bad) }
                guard next == UInt8(ascii: ",") else { throw Malformed() }
            }
        }

        /// One element of the batch: a point, or why it is not one.
        package mutating func element() throws(Malformed) -> (PositionReport?, [String]) {
            guard try peek() == UInt8(ascii: "{") else {
                try skipValue()
                return (nil, ["lat"])
            }
            index += 1
            // A key's first value counts, as `JSONDecoder` reads an object; `null` is a value too.
            var fields: [String: Value?] = [:]
            if try peek() == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    guard try peek() == UInt8(ascii: "\"") else { throw Malformed() }
                    let key = try string()
                    try expect(UInt8(ascii: ":"))
                    switch key {
                    case "lat", "lng", "heading", "speedMps", "accuracyM", "recordedAt":
                        if fields[key] == nil { fields[key] = .some(try value()) } else { try skipValue() }
                    default:
                        try skipValue()
                    }
                    let next = try peek()
                    index += 1
                    if next == UInt8(ascii: "}") { break }
                    guard next == UInt8(ascii: ",") else { throw Malformed() }
                }
            }
            return Self.point(fields)
        }

        /// The checks `JSONObject` makes of a point's fields, in its order.
        package static func point(_ fields: [String: Value?]) -> (PositionReport?, [String]) {
            var bad: [String] = []
            func number(_ name: String, required: Bool, in range: ClosedRange<Double>) -> Double? {
                guard let value = fields[name] ?? nil else {
                    if required { bad.append(name) }
                    return nil
                }
                guard case .number(let number) = value, number.isFinite, range.contains(number) else {
                    bad.append(name)
                    return nil
                }
                return number
            }
            let lat = number("lat", required: true, in: -90...90)
            let lng = number("lng", required: true, in: -180...180)
            let heading = number("heading", required: false, in: 0...360)
            let speed = number("speedMps", required: false, in: 0...150)
            let accuracy = number("accuracyM", required: false, in: 0...100_000)
            var recorded: Date?
            if case .string(let text)?? = fields["recordedAt"], text.count <= 40 {
                recorded = EventJSON.parseTimestamp(text)
            }
            if recorded == nil { bad.append("recordedAt") }
            guard bad.isEmpty, let lat, let lng, let recorded else { return (nil, bad) }
            return (
                PositionReport(
                    coordinate: Coordinate(lat: lat, lng: lng),
                    heading: heading,
                    speedMps: speed,
                    accuracyM: accuracy,
                    recordedAt: recorded
                ), bad
            )
        }

        /// A value a point may care about; nil for `null`.
        package mutating func value() throws(Malformed) -> Value? {
            switch try peek() {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            case UInt8(ascii: "n"):
                try literal("null")
                return nil
            default:
                try skipValue()
                return .other
            }
        }

        package mutating func skipValue() throws(Malformed) {
            switch try peek() {
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try number()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "["):
                index += 1
                if try peek() == UInt8(ascii: "]") {
                    index += 1
                    return
                }
                while true {
                    try skipValue()
                    let next = try peek()
                    index += 1
                    if next == UInt8(ascii: "]") { return }
                    guard next == UInt8(ascii: ",") else { throw Malformed() }
                }
            case UInt8(ascii: "{"):
                index += 1
                if try peek() == UInt8(ascii: "}") {
                    index += 1
                    return
                }
                while true {
                    guard try peek() == UInt8(ascii: "\"") else { throw Malformed() }
                    _ = try string()
                    try expect(UInt8(ascii: ":"))
                    try skipValue()
                    let next = try peek()
                    index += 1
                    if next == UInt8(ascii: "}") { return }
                    guard next == UInt8(ascii: ",") else { throw Malformed() }
                }
            default:
                throw Malformed()
            }
        }

        package mutating func literal(_ word: StaticString) throws(Malformed) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw Malformed() }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw Malformed() }
            index += count
        }

        /// A number as RFC 8259 writes one (no leading zeros, no `+`, no bare `.`).
        package mutating func number() throws(Malformed) -> Double {
            let start = index
            func digits() -> Int {
                let from = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                return index - from
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw Malformed() }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                throw Malformed()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw Malformed() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw Malformed() }
            }
            guard let number = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) else { throw Malformed() }
            return number
        }

        /// A string, its escapes read; text that is not UTF-8 is refused, as `JSONDecoder` does.
        package mutating func string() throws(Malformed) -> String {
            index += 1  // the opening quote
            let start = index
            var plain = true
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    if plain {
                        guard let text = String(validating: raw, as: UTF8.self) else { throw Malformed() }
                        return text
                    }
                    return try Self.unescaped(raw)
                }
                if byte < 0x20 { throw Malformed() }
                if byte == UInt8(ascii: "\\") {
                    plain = false
                    index += 1
                    guard index < bytes.count else { throw Malformed() }
                }
                index += 1
            }
            throw Malformed()
        }

        /// A string's content with its escapes read (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`,
        /// `\uXXXX`, surrogate pairs joined; a lone surrogate is refused).
        package static func unescaped(_ raw: UnsafeBufferPointer<UInt8>) throws(Malformed) -> String {
            var out: [UInt8] = []
            out.reserveCapacity(raw.count)
            var index = 0
            func hex4() throws(Malformed) -> UInt32 {
                guard index + 4 <= raw.count else { throw Malformed() }
                var value: UInt32 = 0
                for byte in raw[index..<index + 4] {
                    let digit: UInt8
                    switch byte {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                    default: throw Malformed()
                    }
                    value = value << 4 | UInt32(digit)
                }
                index += 4
                return value
            }
            while index < raw.count {
                let byte = raw[index]
                index += 1
                guard byte == UInt8(ascii: "\\") else {
                    out.append(byte)
                    continue
                }
                let escape = raw[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 2 <= raw.count, raw[index] == UInt8(ascii: "\\"), raw[index + 1] == UInt8(ascii: "u") else { throw Malformed() }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw Malformed() }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let character = Unicode.Scalar(scalar) else { throw Malformed() }
                    out.append(contentsOf: String(character).utf8)
                default:
                    throw Malformed()
                }
            }
            guard let text = String(validating: out, as: UTF8.self) else { throw Malformed() }
            return text
        }
    }
}
