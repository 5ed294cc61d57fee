import PostgresNIO

/// A statement that returns a row returned none: a bug, or a race with a change that removed the
/// row meanwhile — never the client's doing. Answered as a 500 and logged, where a force-unwrap
/// would have crashed the process.
package struct MissingRow: Error, CustomStringConvertible {
    /// What the statement was to return (`the order after its move`).
    package var what: String

    package init(what: String) {
        self.what = what
    }

    package var description: String { "no row came back for \(what)" }
}

extension Array where Element == PostgresRow {
    /// The first row of a statement that returns one.
    /// - Throws: `MissingRow` naming `what` when it returned none.
    package func first(_ what: String) throws(MissingRow) -> PostgresRow {
        guard let row = first else { throw MissingRow(what: what) }
        return row
    }
}
