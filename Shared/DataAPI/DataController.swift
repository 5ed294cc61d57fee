import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Logging
import NIOCore
import PostgresNIO
import ServiceKit

/// `/rest/v1/{table}` and `/rest/v1/rpc/{function}` of one service: the PostgREST subset over the
/// tables it exposes. Reads are SQL rendered from the allow-listed description under the
/// service's row-level security; writes go through the table's domain functions. Every answer,
/// an error included, is in PostgREST's shape.
package struct DataController: Sendable {
    package let tables: [String: DataTable]
    package let functions: [String: DataFunction]
    /// Verifies a bearer token that is not the client's anon key.
    package let verify: @Sendable (String) async throws(AccessTokenError) -> AccessTokenClaims
    package let logger: Logger
    /// The most rows one insert, PATCH or DELETE may write.
    package let maxWriteRows: Int

    package init(
        tables: [DataTable],
        functions: [DataFunction] = [],
        maxWriteRows: Int = 1_000,
        logger: Logger,
        verify: @escaping @Sendable (String) async throws(AccessTokenError) -> AccessTokenClaims
    ) {
        self.tables = Dictionary(uniqueKeysWithValues: tables.map { ($0.description.name, $0) })
        self.functions = Dictionary(uniqueKeysWithValues: functions.map { ($0.name, $0) })
        self.verify = verify
        self.logger = logger
        self.maxWriteRows = maxWriteRows
    }

    package func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        let rest = router.group("rest/v1")
        for method in [HTTPRequest.Method.get, .head, .post, .patch, .delete, .put] {
            rest.on(":table", method: method) { request, context in
                await answer(request) { () async throws -> Response in
                    try await table(request, name: context.parameters.get("table") ?? "")
                }
            }
        }
        for method in [HTTPRequest.Method.get, .head, .post, .patch, .delete, .put] {
            rest.on("rpc/:function", method: method) { request, context in
                await answer(request) { () async throws -> Response in
                    guard request.method == .post else {
                        throw DataAPIError(
                            .methodNotAllowed,
                            code: "PGRST117",
                            message: "Unsupported HTTP method: \(request.method.rawValue)",
                            hint: "Call functions with POST."
                        )
                    }
                    return try await rpc(request, name: context.parameters.get("function") ?? "")
                }
            }
        }
    }

    // MARK: Tables

    private func table(_ request: Request, name: String) async throws -> Response {
        guard let table = tables[name] else { throw DataAPIError.unknownTable(name) }
        let caller = try await caller(request.headers)
        let preferences = try RequestPreferences(request.headers)
        var query = try DataQuery(query: request.uri.query ?? "")
        if query.limit == nil, query.offset == nil, let range = request.headers[.range].flatMap(Self.itemRange) {
            query.offset = range.lowerBound
            query.limit = range.count
        }
        switch request.method {
        case .get, .head:
            return try await read(table, query, preferences, caller: caller, head: request.method == .head)
        case .post:
            return try await insert(table, query, preferences, body: try await body(request), caller: caller)
        case .patch:
            return try await update(table, query, preferences, body: try await body(request), caller: caller)
        case .delete:
            return try await delete(table, query, preferences, caller: caller)
        default:
            throw DataAPIError(.methodNotAllowed, code: "PGRST117", message: "Unsupported HTTP method: \(request.method.rawValue)")
        }
    }

    private func read(
        _ table: DataTable,
        _ query: DataQuery,
        _ preferences: RequestPreferences,
        caller: DataCaller,
        head: Bool
    ) async throws -> Response {
        var statements = [try table.renderer.read(query)]
        if preferences.count { statements.append(try table.renderer.count(query)) }
        let results = try await table.read(caller, statements)
        let (json, rows) = try results[0][0].decode((String, Int).self)
        let total = preferences.count ? try results[1][0].decode(Int.self) : nil
        let offset = query.offset ?? 0
        var headers: HTTPFields = [.contentRange: Self.contentRange(offset: offset, rows: rows, total: total)]
        if preferences.count { headers[.preferenceApplied] = "count=exact" }
        let status: HTTPResponse.Status = if let total, rows < total { .partialContent } else { .ok }
        return try respond(status, json: json, rows: rows, shape: preferences.shape, headers: headers, head: head)
    }

    private func insert(
        _ table: DataTable,
        _ query: DataQuery,
        _ preferences: RequestPreferences,
        body: JSONValue,
        caller: DataCaller
    ) async throws -> Response {
        guard let insert = table.writes.insert else { throw Self.notAllowed("insert into", table, caller) }
        let objects: [[String: JSONValue]] =
            switch body {
            case .object(let object): [object]
            case .array(let items):
                try items.map { (item) throws(DataAPIError) -> [String: JSONValue] in
                    guard case .object(let object) = item else { throw Self.invalidJSON("every element of the array must be an object") }
                    return object
                }
            default: throw Self.invalidJSON("the body must be an object or an array of objects")
            }
        guard objects.count <= maxWriteRows else {
            throw DataAPIError(.contentTooLarge, code: "PGRST413", message: "At most \(maxWriteRows) rows per insert")
        }
        let rows = try objects.map { (object) throws(DataAPIError) -> [String: JSONValue] in
            try Self.writableFields(object, of: table.description, only: query.columns)
        }
        var onConflict: [String]? = nil
        if let named = query.onConflict {
            for column in named { _ = try table.description.queried(column) }
            onConflict = named
        } else if preferences.resolution != nil {
            onConflict = table.description.primaryKey
        }
        let keys =
            rows.isEmpty
            ? []
            : try await insert(
                rows,
                InsertRequest(caller: caller, onConflict: onConflict, resolution: onConflict == nil ? nil : preferences.resolution)
            )
        var headers: HTTPFields = [.contentRange: "*/*"]
        if onConflict != nil, let resolution = preferences.resolution {
            headers[.preferenceApplied] = resolution == .mergeDuplicates ? "resolution=merge-duplicates" : "resolution=ignore-duplicates"
        }
        return try await written(table, query, preferences, keys: keys, caller: caller, status: .created, headers: headers)
    }

    private func update(
        _ table: DataTable,
        _ query: DataQuery,
        _ preferences: RequestPreferences,
        body: JSONValue,
        caller: DataCaller
    ) async throws -> Response {
        guard !query.filters.isEmpty else {
            throw DataAPIError(.badRequest, code: "21000", message: "UPDATE requires a WHERE clause", hint: "Add a filter, such as id=eq.<id>.")
        }
        guard let update = table.writes.update else { throw Self.notAllowed("update", table, caller) }
        guard case .object(let object) = body else { throw Self.invalidJSON("the body of a PATCH must be an object") }
        let changes = try Self.writableFields(object, of: table.description, only: query.columns)
        var changed: [[String: JSONValue]] = []
        for key in try await matchingKeys(table, query, caller: caller) {
            let changedRow = changes.isEmpty ? true : try await update(key, changes, caller)
            if changedRow { changed.append(key) }
        }
        return try await written(
            table,
            query,
            preferences,
            keys: changed,
            caller: caller,
            status: .ok,
            headers: [.contentRange: "0-\(max(changed.count - 1, 0))/*"]
        )
    }

    private func delete(_ table: DataTable, _ query: DataQuery, _ preferences: RequestPreferences, caller: DataCaller) async throws -> Response {
        guard !query.filters.isEmpty else {
            throw DataAPIError(.badRequest, code: "21000", message: "DELETE requires a WHERE clause", hint: "Add a filter, such as id=eq.<id>.")
        }
        guard let delete = table.writes.delete else { throw Self.notAllowed("delete from", table, caller) }
        let keys = try await matchingKeys(table, query, caller: caller)
        let representation = preferences.returning == .representation
        // Each row as it was, for return=representation, read before it goes; shown only when the
        // delete was the caller's to make.
        var rows: [String] = []
        var deleted = 0
        for key in keys {
            let before =
                representation
                ? try await table.read(caller, [try table.renderer.read(query, keys: [key])])[0][0].decode((String, Int).self) : ("[]", 0)
            guard try await delete(key, caller) else { continue }
            deleted += 1
            if before.1 == 1 { rows.append(String(before.0.dropFirst().dropLast())) }
        }
        let headers: HTTPFields = [.contentRange: deleted == 0 ? "*/*" : "0-\(deleted - 1)/*"]
        guard representation else { return Response(status: .noContent, headers: headers) }
        return try respond(
            .ok,
            json: "[" + rows.joined(separator: ",") + "]",
            rows: rows.count,
            shape: preferences.shape,
            headers: headers,
            head: false
        )
    }

    /// The primary keys of the rows the filters select that the caller can see.
    private func matchingKeys(_ table: DataTable, _ query: DataQuery, caller: DataCaller) async throws -> [[String: JSONValue]] {
        let json = try await table.read(caller, [try table.renderer.keys(query, limit: maxWriteRows + 1)])[0][0].decode(String.self)
        let keys = try JSONDecoder().decode([[String: JSONValue]].self, from: Data(json.utf8))
        guard keys.count <= maxWriteRows else {
            throw DataAPIError(
                .badRequest,
                code: "PGRST124",
                message: "The filters select more than \(maxWriteRows) rows",
                hint: "Narrow the filters: one request changes at most \(maxWriteRows) rows."
            )
        }
        return keys
    }

    /// The answer to a write: the rows it wrote with `return=representation`, else no body.
    private func written(
        _ table: DataTable,
        _ query: DataQuery,
        _ preferences: RequestPreferences,
        keys: [[String: JSONValue]],
        caller: DataCaller,
        status: HTTPResponse.Status,
        headers: HTTPFields
    ) async throws -> Response {
        guard preferences.returning == .representation else {
            return Response(status: status == .created ? .created : .noContent, headers: headers)
        }
        let (json, rows) =
            keys.isEmpty ? ("[]", 0) : try await table.read(caller, [try table.renderer.read(query, keys: keys)])[0][0].decode((String, Int).self)
        return try respond(status, json: json, rows: rows, shape: preferences.shape, headers: headers, head: false)
    }

    // MARK: Functions

    private func rpc(_ request: Request, name: String) async throws -> Response {
        guard let function = functions[name] else {
            throw DataAPIError(.notFound, code: "PGRST202", message: "Could not find the function public.\(name) in the schema cache")
        }
        let caller = try await caller(request.headers)
        _ = try RequestPreferences(request.headers)
        let body = try await body(request, emptyIs: .object([:]))
        guard case .object(let arguments) = body else { throw Self.invalidJSON("the arguments must be a JSON object") }
        let result = try await function.call(arguments, caller)
        let data = try JSONEncoder().encode(result)
        return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    // MARK: Parts

    /// The caller: anonymous without a bearer token or with the anon key as one, else the
    /// verified token's user.
    private func caller(_ headers: HTTPFields) async throws(DataAPIError) -> DataCaller {
        guard let token = headers.bearerToken, token != headers[.apiKey] else { return .anonymous }
        do {
            return DataCaller(claims: try await verify(token))
        } catch .keysUnavailable {
            throw DataAPIError(.serviceUnavailable, code: "PGRST300", message: "Access tokens cannot be checked just now; retry shortly.")
        } catch .expired {
            throw DataAPIError(.unauthorized, code: "PGRST303", message: "JWT expired")
        } catch {
            throw DataAPIError(.unauthorized, code: "PGRST301", message: "JWT could not be verified", details: String(describing: error))
        }
    }

    private func body(_ request: Request, emptyIs empty: JSONValue? = nil) async throws -> JSONValue {
        var request = request
        let buffer = try await request.collectBody(upTo: 1 << 20)
        if buffer.readableBytes == 0, let empty { return empty }
        guard !JSONText.containsNUL(buffer.readableBytesView) else {
            throw Self.invalidJSON("text in the body may not hold the NUL character (\\u0000), which Postgres cannot store")
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(buffer: buffer))
        } catch {
            throw Self.invalidJSON("the body is not JSON")
        }
    }

    private static func invalidJSON(_ details: String) -> DataAPIError {
        DataAPIError(.badRequest, code: "PGRST102", message: "Empty or invalid json", details: details)
    }

    private static func notAllowed(_ action: String, _ table: DataTable, _ caller: DataCaller) -> DataAPIError {
        DataAPIError(
            caller.userID == nil ? .unauthorized : .forbidden,
            code: "42501",
            message: "permission denied to \(action) \(table.description.name)"
        )
    }

    /// The fields of a body object, each a writable column of the table (`columns=` keeps only
    /// those), under the names the table's writes know (an alias's value is its column's), each
    /// text value as the column stores it.
    private static func writableFields(
        _ object: [String: JSONValue],
        of table: TableDescription,
        only columns: [String]?
    ) throws(DataAPIError) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        for name in columns ?? Array(object.keys) {
            guard let column = table.column(name), column.writable else { throw .unknownBodyColumn(name, of: table.name) }
            guard var value = object[name] else { continue }
            if case .string(let text) = value { value = .string(column.normalized(text)) }
            if let earlier = fields[column.canonical], earlier != value {
                throw DataAPIError(
                    .badRequest,
                    code: "42701",
                    message: "column \"\(column.canonical)\" specified more than once",
                    details: "\(name) names \(column.canonical), given another value in the same row."
                )
            }
            fields[column.canonical] = value
        }
        return fields
    }

    /// `Range: 0-24` (items), as PostgREST takes it when no `limit`/`offset` is given.
    static func itemRange(_ header: String) -> ClosedRange<Int>? {
        let parts = header.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let lower = Int(parts[0]), lower >= 0 else { return nil }
        guard let upper = Int(parts[1]) else { return nil }
        return upper >= lower ? lower...upper : nil
    }

    static func contentRange(offset: Int, rows: Int, total: Int?) -> String {
        let size = total.map(String.init) ?? "*"
        return rows == 0 ? "*/\(size)" : "\(offset)-\(offset + rows - 1)/\(size)"
    }

    private func respond(
        _ status: HTTPResponse.Status,
        json: String,
        rows: Int,
        shape: RequestPreferences.Shape,
        headers: HTTPFields,
        head: Bool
    ) throws -> Response {
        var headers = headers
        var body = json
        switch shape {
        case .array:
            headers[.contentType] = "application/json; charset=utf-8"
        case .object:
            guard rows == 1 else { throw DataAPIError.notOneRow(rows) }
            body = String(json.dropFirst().dropLast())
            headers[.contentType] = "application/vnd.pgrst.object+json; charset=utf-8"
        }
        if head { return Response(status: status, headers: headers) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    // MARK: Errors

    /// Runs `work`, answering whatever it throws in PostgREST's shape.
    private func answer(_ request: Request, _ work: () async throws -> Response) async -> Response {
        let error: DataAPIError
        do {
            return try await work()
        } catch let failure as DataAPIError {
            error = failure
        } catch let problem as Problem {
            error = Self.translated(problem)
        } catch let failure as PSQLError {
            error = Self.translated(failure, logger: logger)
        } catch let failure {
            logger.error("data API request failed", metadata: ["path": "\(request.uri.path)", "error": "\(String(reflecting: failure))"])
            error = DataAPIError(.internalServerError, code: "XX000", message: "The request could not be answered")
        }
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if error.status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        return Response(
            status: error.status,
            headers: headers,
            body: request.method == .head ? .init() : .init(byteBuffer: ByteBuffer(bytes: error.json))
        )
    }

    /// A service's own error (its problem), as PostgREST would put it: the problem's detail as the
    /// message, its field errors as the details, and no hint (a problem's type is not one).
    static func translated(_ problem: Problem) -> DataAPIError {
        let message = problem.detail ?? problem.title
        let details = problem.errors.isEmpty ? problem.detail : problem.errors.map(\.detail).joined(separator: "; ")
        switch problem.status {
        case .conflict: return DataAPIError(.conflict, code: "23505", message: message, details: details)
        case .forbidden: return DataAPIError(.forbidden, code: "42501", message: message, details: details)
        case .notFound: return DataAPIError(.conflict, code: "23503", message: message, details: details)
        case .badRequest, .unprocessableContent:
            return DataAPIError(.badRequest, code: "22023", message: message, details: details)
        case .unauthorized: return DataAPIError(.unauthorized, code: "PGRST301", message: message, details: details)
        default: return DataAPIError(problem.status, code: "P0001", message: message, details: details)
        }
    }

    /// A database error, with PostgREST's status for its SQLSTATE.
    static func translated(_ error: PSQLError, logger: Logger) -> DataAPIError {
        guard let state = error.serverInfo?[.sqlState] else {
            logger.error("data API statement failed", metadata: ["error": "\(String(reflecting: error))"])
            return DataAPIError(.serviceUnavailable, code: "PGRST000", message: "The database could not be reached")
        }
        let message = error.serverInfo?[.message] ?? "database error \(state)"
        let details = error.serverInfo?[.detail]
        let hint = error.serverInfo?[.hint]
        let status: HTTPResponse.Status =
            switch state {
            case "23505", "23503": .conflict
            case "42501": .forbidden
            case "57014": .internalServerError
            case let code where code.hasPrefix("22") || code.hasPrefix("23") || code.hasPrefix("42"): .badRequest
            default: .internalServerError
            }
        if status == .internalServerError {
            logger.error("data API statement failed", metadata: ["sqlstate": "\(state)", "message": "\(message)"])
        }
        return DataAPIError(status, code: state, message: message, details: details, hint: hint)
    }
}
