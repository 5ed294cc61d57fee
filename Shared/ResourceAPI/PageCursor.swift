import Foundation
import Identity
import ServiceKit

/// A page position in a list ordered by a time and a tie-breaking key — newest first (`(created_at,
/// id) DESC`) or in the order added — handed to clients as an opaque string and given back as
/// `cursor`. Keyset pagination: a page starts after the last row of the one before, so rows
/// inserted meanwhile neither repeat nor shift a page, as offsets would.
package struct PageCursor: Sendable, Equatable, CustomStringConvertible {
    package var time: Date
    package var key: String

    package init(time: Date, key: String) {
        self.time = time
        self.key = key
    }

    /// The position after a row whose time is `time` and key `id`.
    package init(time: Date, id: UUID) {
        self.init(time: time, key: id.lowercased)
    }

    /// Microseconds, as Postgres keeps `timestamptz`, so the cursor compares equal to its row.
    package var microseconds: Int64 { Int64((time.timeIntervalSince1970 * 1_000_000).rounded()) }

    /// `nil` for text that is not a cursor this type wrote.
    package init?(_ text: String) {
        guard let data = Base64URL.decode(Substring(text)), let decoded = String(data: data, encoding: .utf8),
            let separator = decoded.firstIndex(of: "|"), let micros = Int64(decoded[..<separator])
        else { return nil }
        time = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
        key = String(decoded[decoded.index(after: separator)...])
    }

    /// The key as a UUID, for lists keyed by id.
    package var id: UUID? { UUID(uuidString: key) }

    package var description: String {
        Base64URL.encode(Array("\(microseconds)|\(key)".utf8))
    }
}
