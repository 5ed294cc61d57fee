import Foundation
import HTTPTypes
import ServiceKit

/// An error as PostgREST answers it: `{"code","details","hint","message"}` with its status.
/// `message` is always there (supabase-swift requires it); `details` and `hint` may be null.
package struct DataAPIError: Error, Sendable, Equatable {
    package var status: HTTPResponse.Status
    package var code: String
    package var message: String
    package var details: String?
    package var hint: String?

    package init(_ status: HTTPResponse.Status, code: String, message: String, details: String? = nil, hint: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.hint = hint
    }

    /// PGRST100: the query string does not parse.
    package static func badQuery(_ message: String, details: String? = nil) -> Self {
        Self(.badRequest, code: "PGRST100", message: message, details: details)
    }

    /// 42703: a column the table does not have, in a filter, `select` or `order`.
    package static func unknownColumn(_ column: String, of table: String) -> Self {
        Self(.badRequest, code: "42703", message: "column \(table).\(column) does not exist")
    }

    /// PGRST204: a column the table does not have (or that cannot be written) in a body.
    package static func unknownBodyColumn(_ column: String, of table: String) -> Self {
        Self(.badRequest, code: "PGRST204", message: "Could not find the '\(column)' column of '\(table)' in the schema cache")
    }

    /// PGRST205: a table that is not exposed.
    package static func unknownTable(_ table: String) -> Self {
        Self(.notFound, code: "PGRST205", message: "Could not find the table 'public.\(table)' in the schema cache")
    }

    /// PGRST116: `.single()` with other than one row.
    package static func notOneRow(_ count: Int) -> Self {
        Self(
            .notAcceptable,
            code: "PGRST116",
            message: "JSON object requested, multiple (or no) rows returned",
            details: "The result contains \(count) rows"
        )
    }

    /// 42501: a write that would give a row to someone else, or a write the caller may not make.
    package static func forbidden(_ message: String) -> Self {
        Self(.forbidden, code: "42501", message: message)
    }

    /// The body of the error, as PostgREST writes it.
    package var json: Data {
        PostgRESTError(code: code, message: message, details: details, hint: hint).json
    }
}
