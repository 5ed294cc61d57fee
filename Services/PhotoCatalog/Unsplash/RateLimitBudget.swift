import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Unsplash's hourly request budget, as the last upstream answer reported it.
///
/// Shared by the replicas through `catalog.budget` (read and written inside the fetch that holds
/// the key's lock, so it costs nothing on cache hits). Below `reserve` remaining requests, or after
/// Unsplash has said "rate limited", no further upstream call is made until the budget is expected
/// back: a window's length after the first call of the window Unsplash counted.
struct BudgetState: Sendable, Equatable {
    var quota: Int?
    var remaining: Int?
    var resetsAt: Date?

    /// How long until an upstream call may be made again; `nil` when one may be made now.
    func wait(reserve: Int, now: Date) -> Duration? {
        guard let remaining, remaining <= reserve, let resetsAt, now < resetsAt else { return nil }
        return .milliseconds(Int64(resetsAt.timeIntervalSince(now) * 1_000).clamped(to: 1...Int64.max))
    }

    /// Takes in what one answer said about the budget.
    mutating func observe(quota: Int?, remaining: Int?, rateLimited: Bool, now: Date, window: Duration) {
        let newWindow = resetsAt.map { now >= $0 } ?? true
        if rateLimited {
            self.remaining = 0
            if newWindow { resetsAt = now.addingTimeInterval(window.seconds) }
            return
        }
        guard let remaining else { return }
        // More left than before means Unsplash refilled the budget: a new window began.
        if newWindow || remaining > (self.remaining ?? .max) {
            resetsAt = now.addingTimeInterval(window.seconds)
        }
        self.remaining = remaining
        if let quota { self.quota = quota }
    }

    static func read(on connection: PostgresConnection, logger: Logger) async throws -> BudgetState {
        let rows = try await connection.query("SELECT quota, remaining, resets_at FROM catalog.budget", logger: logger)
        for try await (quota, remaining, resetsAt) in rows.decode((Int32?, Int32?, Date?).self) {
            return BudgetState(quota: quota.map(Int.init), remaining: remaining.map(Int.init), resetsAt: resetsAt)
        }
        return BudgetState()
    }

    func write(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            UPDATE catalog.budget SET quota = \(quota.map { Int32(clamping: $0) }), remaining = \(remaining.map { Int32(clamping: $0) }),
                resets_at = \(resetsAt), observed_at = now()
            """,
            logger: logger
        )
    }
}

extension Comparable {
    fileprivate func clamped(to range: ClosedRange<Self>) -> Self { min(max(self, range.lowerBound), range.upperBound) }
}
