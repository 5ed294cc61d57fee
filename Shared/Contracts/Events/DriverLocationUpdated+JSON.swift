import Foundation

/// Positions are published at tens of thousands a second: their payload is written directly,
/// byte for byte what `EventJSON.encoder` writes (a test holds them equal), keys in sorted order
/// and absent values left out.
extension DriverLocationUpdated: JSONWritable {
    package func write(to writer: inout JSONWriter) {
        writer.object { writer in
            if let accuracyM {
                writer.key("accuracyM")
                writer.number(accuracyM)
            }
            writer.key("driverId")
            writer.uuid(driverId)
            if let etaSeconds {
                writer.key("etaSeconds")
                writer.integer(etaSeconds)
            }
            if let heading {
                writer.key("heading")
                writer.number(heading)
            }
            writer.key("latitude")
            writer.number(latitude)
            writer.key("longitude")
            writer.number(longitude)
            if let orderId {
                writer.key("orderId")
                writer.uuid(orderId)
            }
            writer.key("recordedAt")
            writer.date(recordedAt)
            if let speedMps {
                writer.key("speedMps")
                writer.number(speedMps)
            }
        }
    }
}
