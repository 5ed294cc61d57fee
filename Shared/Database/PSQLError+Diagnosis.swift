import PostgresNIO
import ServiceKit

/// The server's SQLSTATE, message, constraint and table, and the statement's text; never its bound
/// values, nor the server's DETAIL (which quotes the row: "Key (email)=(…) already exists").
extension PSQLError: LogDiagnosable {
    package var diagnosis: String {
        guard let server = serverInfo else {
            return "Postgres: \(code)" + (underlying.map { " (\($0))" } ?? "")
        }
        var parts = ["Postgres \(server[.sqlState] ?? "?"): \(server[.message] ?? "\(code)")"]
        if let constraint = server[.constraintName] { parts.append("constraint \(constraint)") }
        if let table = server[.tableName] { parts.append("table \(table)") }
        if let sql = query?.sql { parts.append("in \(sql.split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(300))") }
        return parts.joined(separator: "; ")
    }
}

extension PSQLError: TransientFailure {
    /// A connection lost or refused, or a server shutting down or starting (SQLSTATE classes 08
    /// and 57P): the same request may well succeed in a moment.
    package var isTransient: Bool {
        switch code {
        case .clientClosedConnection, .serverClosedConnection, .connectionError, .uncleanShutdown, .poolClosed:
            return true
        case .server:
            let state = serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P")
        default:
            return (underlying as? PSQLError)?.isTransient ?? false
        }
    }
}

extension PSQLError {
    /// The server ending the session: shutting down (57P01, 57P02) or not yet taking connections
    /// (57P03) — which it says before it closes the socket.
    package var endsTheSession: Bool {
        code == .server && ["57P01", "57P02", "57P03"].contains(serverInfo?[.sqlState] ?? "")
    }
}

extension PostgresTransactionError: TransientFailure {
    /// A `BEGIN`, `COMMIT` or rollback that failed for a transient reason (the closure's own
    /// errors are given back unwrapped by `unwrappingTransactionErrors`).
    package var isTransient: Bool {
        [beginError, closureError, commitError, rollbackError].contains { ($0 as? any TransientFailure)?.isTransient == true }
    }
}
