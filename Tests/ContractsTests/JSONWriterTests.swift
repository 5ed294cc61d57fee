import Foundation
import Testing

@testable import Contracts

/// Payloads written directly (`JSONWritable`) are byte for byte what `EventJSON.encoder` writes.
@Suite struct JSONWriterTests {
    @Test func aDriverPositionIsWrittenAsTheEncoderWritesIt() throws {
        var random = SystemRandomNumberGenerator()
        let numbers: [Double] = [0, -0.0, 60.0, 60.17, 24.9414, -90, 180, 1e-7, 1e21, 0.1 + 0.2, 149.999999, 100_000, .leastNonzeroMagnitude]
        for round in 0..<2_000 {
            func maybe<T>(_ value: T) -> T? { Bool.random(using: &random) ? value : nil }
            func number() -> Double { round % 2 == 0 ? numbers.randomElement(using: &random)! : Double.random(in: -180...180, using: &random) }
            let event = DriverLocationUpdated(
                driverId: UUID(),
                orderId: maybe(UUID()),
                latitude: number(),
                longitude: number(),
                heading: maybe(number()),
                speedMps: maybe(number()),
                accuracyM: maybe(number()),
                etaSeconds: maybe(Int.random(in: -5...100_000, using: &random)),
                recordedAt: Date(timeIntervalSince1970: Double.random(in: 0...4_000_000_000, using: &random))
            )
            let written = event.jsonBytes
            let encoded = Array(try EventJSON.encoder.encode(event))
            #expect(written == encoded, "\(String(decoding: written, as: UTF8.self)) vs \(String(decoding: encoded, as: UTF8.self))")
            #expect(try EventJSON.decoder.decode(DriverLocationUpdated.self, from: Data(written)).driverId == event.driverId)
        }
    }
}
