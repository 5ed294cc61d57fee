import Contracts
import Database
import Foundation
import Hummingbird
import Identity
import KeySetClient
import Logging
import PostgresNIO
import ResourceAPI
import ServiceKit

/// `/v1/drivers/me/…`: a driver goes on or off shift and sends positions.
struct DriversController: Sendable {
    let client: PostgresClient
    let positions: PositionIngest
    let keys: KeySetCache
    let logger: Logger

    static let maxBatch = 100

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("drivers/me/shift") { request, context in
            let caller = try await keys.caller(request.headers)
            try caller.require(.driver, to: "go on shift")
            var request = request
            var body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
            let onShift = body.bool("onShift", required: true)
            try body.validate()
            try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
                try await connection.query("""
                    INSERT INTO drivers (user_id, on_shift) VALUES (\(caller.id), \(onShift!))
                    ON CONFLICT (user_id) DO UPDATE SET on_shift = excluded.on_shift, updated_at = clock_timestamp()
                    """, logger: logger)
            }
            return try JSONBody.response(.ok, Shift(onShift: onShift!))
        }
        group.post("drivers/me/positions") { request, context in
            let caller = try await keys.caller(request.headers)
            try caller.require(.driver, to: "send positions")
            var request = request
            let (points, fields) = try Self.points(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
            let (accepted, refused) = PositionIngest.check(points, fields: fields)
            try await positions.publish(accepted.map(\.1), driver: caller.id)
            return try JSONBody.response(.ok, Ingested(accepted: accepted.count, refused: refused))
        }
    }

    struct Shift: Encodable, Sendable {
        var onShift: Bool
    }

    struct Ingested: Encodable, Sendable {
        var accepted: Int
        var refused: [RefusedPoint]
    }

    /// The batch: each point, or nil with the names of its bad fields.
    /// - Throws: 422 when the body is not an array of 1–100 objects.
    static func points(_ bytes: [UInt8]) throws -> ([PositionReport?], [[String]]) {
        guard case .array(let values)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)), (1...maxBatch).contains(values.count) else {
            throw Problem.validation([FieldError(.body(pointer: ""), "the body is a JSON array of 1 to \(maxBatch) positions {lat, lng, heading?, speedMps?, accuracyM?, recordedAt}")])
        }
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
            if bad.isEmpty, let lat, let lng, let recorded {
                points.append(PositionReport(coordinate: .init(lat: lat, lng: lng), heading: heading, speedMps: speed, accuracyM: accuracy, recordedAt: recorded))
            } else {
                points.append(nil)
            }
        }
        return (points, fields)
    }
}
