import Foundation
import NIOCore
import PostgresNIO

/// A `timestamptz` to the microsecond, as Postgres keeps it. PostgresNIO binds a `Date` through a
/// `Double`, truncated, so a time read from a row and bound again can come back a microsecond
/// early — and a keyset page would then start at the row it ended with. Bind page positions as
/// this instead.
package struct ExactTimestamp: PostgresEncodable, Sendable, Equatable {
    /// Microseconds since 1970-01-01 UTC.
    package var microseconds: Int64

    package init(microseconds: Int64) {
        self.microseconds = microseconds
    }

    /// `date` rounded to the nearest microsecond.
    package init(_ date: Date) {
        microseconds = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    package static var psqlType: PostgresDataType { .timestamptz }
    package static var psqlFormat: PostgresFormat { .binary }

    /// Postgres counts from 2000-01-01.
    private static let postgresEpoch: Int64 = 946_684_800 * 1_000_000

    package func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        byteBuffer.writeInteger(microseconds - Self.postgresEpoch)
    }
}
