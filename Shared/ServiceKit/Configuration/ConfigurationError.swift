/// A configuration variable that is missing or does not have the expected form.
///
/// Its description names the variable and the form it expects, and shows the offending value unless
/// the variable holds a secret. `ServiceMain` prints it and exits with status 2.
package struct ConfigurationError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What is wrong with the variable.
    package enum Problem: Sendable, Equatable {
        /// The variable is required and not set (or set to an empty string).
        case missing
        /// The variable is set, but its value does not have the expected form.
        case invalid(value: String?)
        /// The variable is well-formed but conflicts with another setting.
        case conflicting(reason: String)
    }

    /// The environment variable, e.g. `DATABASE_URL`.
    package var variable: String
    /// The expected form, e.g. `a postgres:// URL`.
    package var expected: String
    package var problem: Problem

    package init(variable: String, expected: String, problem: Problem) {
        self.variable = variable
        self.expected = expected
        self.problem = problem
    }

    package var description: String {
        switch problem {
        case .missing:
            return "\(variable) is not set; expected \(expected)"
        case .invalid(let value?):
            return "\(variable) is \"\(value)\"; expected \(expected)"
        case .invalid(nil):
            return "\(variable) is not valid (value hidden: it holds a secret); expected \(expected)"
        case .conflicting(let reason):
            return "\(variable): \(reason); expected \(expected)"
        }
    }
}
