/// Why migrations could not be applied. The description says what to do about it.
package enum MigrationError: Error, CustomStringConvertible, Equatable {
    case invalidSchemaName(String)
    case invalidFileName(String)
    case missingDirectory(String)
    case duplicateVersion(Int, String, String)
    /// An applied migration's file changed after it was applied.
    case checksumMismatch(schema: String, file: String, applied: String, current: String)
    /// A statement of a migration failed; the migration was rolled back.
    case statementFailed(schema: String, file: String, statement: Int, message: String)

    package var description: String {
        switch self {
        case .invalidSchemaName(let name):
            return "\"\(name)\" is not a valid schema name (lowercase letters, digits and _, starting with a letter)"
        case .invalidFileName(let name):
            return "migration file \(name) is not named NNNN_name.sql (a positive version number, an underscore, a name)"
        case .missingDirectory(let name):
            return "the migrations directory \(name) is not among the target's resources"
        case .duplicateVersion(let version, let first, let second):
            return "migrations \(first) and \(second) share version \(version); each version must be unique"
        case .checksumMismatch(let schema, let file, let applied, let current):
            return "migration \(file) of schema \(schema) has changed since it was applied "
                + "(checksum then \(applied.prefix(12)), now \(current.prefix(12))). "
                + "An applied migration must never change: restore the file and put the change in a new migration."
        case .statementFailed(let schema, let file, let statement, let message):
            return "migration \(file) of schema \(schema) failed at statement \(statement) and was rolled back: \(message)"
        }
    }
}
