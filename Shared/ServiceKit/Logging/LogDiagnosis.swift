/// An error whose description hides what an operator needs (PostgresNIO's `PSQLError` prints a
/// fixed sentence so that a query's values cannot leak): `diagnosis` says what went wrong without
/// the data involved. Logged by `ServiceMain` when a service fails to start or stops.
package protocol LogDiagnosable: Error {
    var diagnosis: String { get }
}

extension Error {
    /// The error's diagnosis when it has one, else its description.
    package var logDescription: String {
        (self as? any LogDiagnosable)?.diagnosis ?? "\(self)"
    }
}
