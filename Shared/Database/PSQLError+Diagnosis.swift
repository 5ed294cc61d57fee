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
