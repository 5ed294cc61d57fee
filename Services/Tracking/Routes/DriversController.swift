import Contracts
import Database
import Foundation
import Hummingbird
import Identity
import KeySetClient
import Logging
import PositionReports
import PostgresNIO
import ResourceAPI
import ServiceKit

/// `/v1/drivers/me/…`: a driver goes on or off shift and sends positions.
struct DriversController: Sendable {
    let client: PostgresClient
    let positions: PositionIngest
    let keys: KeySetCache
    let logger: Logger

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("drivers/me/shift", use: shift)
            .post("drivers/me/positions", use: sendPositions)
    }

    @Sendable func shift(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        try caller.require(.driver, to: "go on shift")
        var request = request
        let shift = try await request.decodeBody(as: Shift.self, context: context)
        try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
            try await connection.query(
                """
                INSERT INTO drivers (user_id, on_shift) VALUES (\(caller.id), \(shift.onShift))
                ON CONFLICT (user_id) DO UPDATE SET on_shift = excluded.on_shift, updated_at = clock_timestamp()
                """,
                logger: logger
            )
        }
        return try JSONBody.response(.ok, shift)
    }

    @Sendable func sendPositions(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        try caller.require(.driver, to: "send positions")
        var request = request
        let (points, fields) = try Self.points(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
        let (accepted, refused) = PositionIngest.check(points, fields: fields)
        try await positions.publish(accepted.map(\.1), driver: caller.id)
        return try JSONBody.response(.ok, Ingested(accepted: accepted.count, refused: refused))
    }

    /// On or off shift: the body of `POST …/shift` and its answer.
    struct Shift: JSONObjectBody, Encodable {
        var onShift: Bool

        init(reading body: inout JSONObject) throws {
            let onShift = body.bool("onShift", required: true)
            self.onShift = try body.validated(onShift)
        }
    }

    struct Ingested: Encodable, Sendable {
        var accepted: Int
        var refused: [RefusedPoint]
    }

    /// The batch: each point, or nil with the names of its bad fields (`PositionBatch`).
    /// - Throws: 422 when the body is not an array of 1–100 values.
    static func points(_ bytes: [UInt8]) throws -> ([PositionReport?], [[String]]) {
        do {
            return try PositionBatch.read(bytes)
        } catch {
            throw Problem.validation([
                FieldError(
                    .body(pointer: ""),
                    "the body is a JSON array of 1 to \(PositionBatch.maxCount) positions {lat, lng, heading?, speedMps?, accuracyM?, recordedAt}"
                )
            ])
        }
    }
}
