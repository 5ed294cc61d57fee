import Contracts
import Foundation
import Identity
import PositionReports
import ResourceAPI
import RoadNetwork
import ServiceKit
import Testing

/// The positions' one-pass reader against the way any other body is read (`JSONDecoder` into
/// `JSONValue`, each point through `JSONObject`): over generated batches, good and bad, both
/// refuse the same bodies and read the same points and bad fields.
@Suite("Reading a batch of positions") struct PositionBatchTests {
    /// The reference reading.
    static func reference(_ bytes: [UInt8]) -> ([PositionReport?], [[String]])? {
        guard case .array(let values)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)),
            (1...PositionBatch.maxCount).contains(values.count)
        else { return nil }
        var points: [PositionReport?] = []
        var fields: [[String]] = []
        for value in values {
            guard case .object(let object) = value else {
                points.append(nil)
                fields.append(["lat"])
                continue
            }
            var point = JSONObject(fields: object, at: "")
            let lat = point.number("lat", required: true, in: -90...90)
            let lng = point.number("lng", required: true, in: -180...180)
            let heading = point.number("heading", required: false, in: 0...360)
            let speed = point.number("speedMps", required: false, in: 0...150)
            let accuracy = point.number("accuracyM", required: false, in: 0...100_000)
            let recorded = point.text("recordedAt", required: true, maxCharacters: 40).flatMap(EventJSON.parseTimestamp)
            var bad = point.errors.compactMap { error -> String? in
                if case .body(let pointer) = error.location { return String(pointer.dropFirst()) } else { return nil }
            }
            if recorded == nil, !bad.contains("recordedAt") { bad.append("recordedAt") }
            fields.append(bad)
            points.append(
                bad.isEmpty
                    ? PositionReport(
                        coordinate: .init(lat: lat!, lng: lng!),
                        heading: heading,
                        speedMps: speed,
                        accuracyM: accuracy,
                        recordedAt: recorded!
                    ) : nil
            )
        }
        return (points, fields)
    }

    struct Generator {
        var random: SeededRandom

        mutating func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &random)! }
        mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }

        mutating func space() -> String { chance(0.2) ? pick([" ", "\n", "\t ", "\r\n  "]) : "" }

        mutating func number() -> String {
            pick([
                String(Double.random(in: -200...200, using: &random)), String(Int.random(in: -200...200, using: &random)),
                "0", "-0", "60.17", "1e1", "2.5E-1", "-1.5e+2", "360", "150", "100000", "100000.5", "-90", "90.0000001",
            ])
        }

        mutating func string() -> String {
            pick([
                "\"\(EventJSON.formatTimestamp(Date().addingTimeInterval(-Double.random(in: 0...120, using: &random))))\"",
                "\"2026-11-26T12:00:00Z\"", "\"2026-11-26T12:00:00.123+02:00\"", "\"yesterday\"", "\"\"", "\"NaN\"",
                "\"2026-11-26T12:00:00\\u002E000Z\"", "\"\\u00e9t\\u00e9\"", "\"\\ud83d\\ude00\"", "\"tab\\tand\\\\slash\\/\"",
                "\"" + String(repeating: "9", count: 41) + "\"",
            ])
        }

        mutating func value(depth: Int = 0) -> String {
            switch Int.random(in: 0..<10, using: &random) {
            case 0...3: return number()
            case 4...5: return string()
            case 6: return pick(["true", "false", "null"])
            case 7 where depth < 2:
                return "[" + (0..<Int.random(in: 0...3, using: &random)).map { _ in space() + value(depth: depth + 1) }.joined(separator: ",") + "]"
            case 8 where depth < 2:
                return "{"
                    + (0..<Int.random(in: 0...2, using: &random)).map { index in "\"k\(index)\":" + value(depth: depth + 1) }.joined(separator: ",")
                    + "}"
            default: return "null"
            }
        }

        mutating func point() -> String {
            var entries: [String] = []
            for key in ["lat", "lng", "heading", "speedMps", "accuracyM", "recordedAt", "unknown", "l\\u0061t"].shuffled(using: &random)
            where chance(0.8) {
                let value: String
                if chance(0.7) {
                    value = key == "recordedAt" ? string() : (key == "unknown" ? self.value() : number())
                } else {
                    value = self.value()
                }
                entries.append(space() + "\"\(key)\"" + space() + ":" + space() + value + space())
                if chance(0.05) { entries.append("\"\(key)\":" + self.value()) }  // the key again
            }
            return "{" + entries.joined(separator: ",") + "}"
        }

        mutating func batch() -> String {
            let count = chance(0.02) ? pick([0, 101]) : Int.random(in: 1...12, using: &random)
            return space() + "[" + (0..<count).map { _ in chance(0.05) ? value() : point() }.joined(separator: "," + space()) + "]" + space()
        }

        /// A batch with something broken in it: a byte dropped, doubled or changed.
        mutating func broken() -> [UInt8] {
            var bytes = Array(batch().utf8)
            guard !bytes.isEmpty else { return bytes }
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes.remove(at: at)
            case 1: bytes.insert(bytes[at], at: at)
            default: bytes[at] = pick(Array("{}[],:\"\\ x0-e.".utf8) + [0x00, 0xFF, 0xC3])
            }
            return bytes
        }
    }

    /// Well-formed batches read alike; of broken ones, what the one-pass reader reads the general
    /// one reads the same way. (`JSONDecoder` is lenient past RFC 8259 — a comma before `}`, a
    /// number such as `1.e` — where the one-pass reader refuses: a 422, never a wrong point.)
    @Test func readsWhatTheGeneralReaderReadsAndRefusesWhatItRefuses() {
        var generator = Generator(random: SeededRandom(state: 24))
        var read = 0
        var refused = 0
        var stricter = 0
        for round in 0..<3_000 {
            let broken = round % 3 == 2
            let bytes = broken ? generator.broken() : Array(generator.batch().utf8)
            let expected = Self.reference(bytes)
            let actual = try? PositionBatch.read(bytes)
            if broken, actual == nil, expected != nil {
                stricter += 1
                continue
            }
            #expect(
                actual?.points == expected?.0 && actual?.badFields == expected?.1,
                "\(String(decoding: bytes, as: UTF8.self)): \(String(describing: actual?.badFields)) vs \(String(describing: expected?.1))"
            )
            if expected == nil { refused += 1 } else { read += 1 }
        }
        #expect(read > 1_000 && refused > 250, "the generator covers both: \(read) read, \(refused) refused")
        #expect(stricter < 100, "\(stricter) broken bodies JSONDecoder read and the one-pass reader refused")
    }

    @Test func aWellFormedBatchReadsPointByPoint() throws {
        let batch =
            #"[{"lat":60.17,"lng":24.94,"recordedAt":"2026-11-26T12:00:00.000Z","speedMps":8.5,"heading":90,"extra":{"a":[1,2]}}, 7, {"lat":95,"lng":"x","recordedAt":null}]"#
        let (points, bad) = try PositionBatch.read(Array(batch.utf8))
        #expect(points.count == 3 && bad == [[], ["lat"], ["lat", "lng", "recordedAt"]])
        #expect(
            points[0]
                == PositionReport(
                    coordinate: .init(lat: 60.17, lng: 24.94),
                    heading: 90,
                    speedMps: 8.5,
                    accuracyM: nil,
                    recordedAt: EventJSON.parseTimestamp("2026-11-26T12:00:00.000Z")!
                )
        )
        for refused in ["", "[]", "{}", "[1,]", "[{\"lat\":1}", "[01]", "[1] x", "[\"\\x\"]", String(repeating: "[", count: 5)] {
            #expect(throws: PositionBatch.NotABatch.self, "\(refused)") { try PositionBatch.read(Array(refused.utf8)) }
        }
    }
}
