import Foundation
import Synchronization

/// Reads typed settings from environment variables.
///
/// Every accessor names the variable it reads and the form it expects, so a bad value stops the
/// service with a message an operator can act on. Library code never reads the process environment
/// itself: `ServiceMain` builds one reader from `ProcessInfo` and hands it to the service's
/// configuration type; tests build readers from dictionaries.
package struct ConfigurationReader: Sendable {
    private let environment: [String: String]
    private let log: ConfigurationReadLog?

    /// - Parameter log: records the name of every variable asked for, set or not (the check that
    ///   each service documents what it reads); `nil` records nothing.
    package init(_ environment: [String: String], log: ConfigurationReadLog? = nil) {
        self.environment = environment
        self.log = log
    }

    /// The raw value of `name`, or `nil` when it is unset or blank. Every accessor reads through it.
    package func raw(_ name: String) -> String? {
        log?.record(name)
        guard let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
            return nil
        }
        return value
    }

    /// Reads `name` and converts it with `parse`.
    ///
    /// - Parameters:
    ///   - expected: the accepted form, in words, used in the error message.
    ///   - default: the value when the variable is unset; `nil` makes the variable required.
    ///   - secret: hides the value in error messages.
    /// - Throws: `ConfigurationError` when the variable is required and unset, or does not parse.
    package func value<Value>(
        _ name: String,
        expected: String,
        default defaultValue: Value? = nil,
        secret: Bool = false,
        parse: (String) -> Value?
    ) throws(ConfigurationError) -> Value {
        guard let raw = raw(name) else {
            if let defaultValue { return defaultValue }
            throw ConfigurationError(variable: name, expected: expected, problem: .missing)
        }
        guard let value = parse(raw) else {
            throw ConfigurationError(variable: name, expected: expected, problem: .invalid(value: secret ? nil : raw))
        }
        return value
    }

    /// Reads `name` when it is set; `nil` when it is not.
    package func optionalValue<Value>(
        _ name: String,
        expected: String,
        secret: Bool = false,
        parse: (String) -> Value?
    ) throws(ConfigurationError) -> Value? {
        guard raw(name) != nil else { return nil }
        return try value(name, expected: expected, secret: secret, parse: parse)
    }

    /// A comma-separated list, each item trimmed, empty items dropped; none when unset.
    package func list(_ name: String, expected: String) throws(ConfigurationError) -> [String] {
        try value(name, expected: expected, default: []) { raw in
            raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
    }

    /// A non-empty string.
    package func string(_ name: String, default defaultValue: String? = nil, secret: Bool = false) throws(ConfigurationError) -> String {
        try value(name, expected: "a non-empty string", default: defaultValue, secret: secret) { $0 }
    }

    /// A secret from `<name>` itself or from the file `<name>_FILE` names (a mounted secret), with
    /// surrounding whitespace trimmed; `nil` when neither is set. Its value never appears in errors.
    /// - Throws: `ConfigurationError` when both are set, or the file cannot be read or is empty.
    package func optionalSecret(_ name: String, expected: String) throws(ConfigurationError) -> String? {
        let fileVariable = "\(name)_FILE"
        if raw(name) != nil, raw(fileVariable) != nil {
            throw ConfigurationError(variable: name, expected: "either \(name) or \(fileVariable), not both", problem: .invalid(value: nil))
        }
        if let value = raw(name) { return value }
        return try optionalValue(fileVariable, expected: "a readable file holding \(expected)") { path in
            (try? String(contentsOfFile: path, encoding: .utf8))
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                .flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    /// A whole number within `range`.
    package func integer(_ name: String, default defaultValue: Int? = nil, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        try value(name, expected: "a whole number from \(range.lowerBound) to \(range.upperBound)", default: defaultValue) { raw in
            Int(raw).flatMap { range.contains($0) ? $0 : nil }
        }
    }

    /// A whole number in `range` when the variable is set; `nil` when it is not.
    package func optionalInteger(_ name: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        raw(name) == nil ? nil : try integer(name, in: range)
    }

    /// A TCP port, 1–65535 (0 when `allowEphemeral`, to let the system choose).
    package func port(_ name: String, default defaultValue: Int? = nil, allowEphemeral: Bool = false) throws(ConfigurationError) -> Int {
        try integer(name, default: defaultValue, in: (allowEphemeral ? 0 : 1)...65_535)
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`).
    package func bool(_ name: String, default defaultValue: Bool? = nil) throws(ConfigurationError) -> Bool {
        try value(name, expected: "true or false", default: defaultValue) { raw in
            switch raw.lowercased() {
            case "true", "1", "yes", "on": true
            case "false", "0", "no", "off": false
            default: nil
            }
        }
    }

    /// A duration such as `250ms`, `30s`, `5m`, `1h` or `30d`, at least `minimum`.
    package func duration(_ name: String, default defaultValue: Duration? = nil, minimum: Duration = .zero) throws(ConfigurationError) -> Duration {
        try value(name, expected: "a duration such as 250ms, 30s, 5m, 1h or 30d (at least \(DurationFormat.format(minimum)))", default: defaultValue)
        { raw in
            DurationFormat.parse(raw).flatMap { $0 >= minimum ? $0 : nil }
        }
    }

    /// A size in bytes such as `512`, `64KiB`, `1MiB` or `25MB`, within `range`.
    package func byteCount(
        _ name: String,
        default defaultValue: Int? = nil,
        in range: ClosedRange<Int> = 1...Int.max
    ) throws(ConfigurationError) -> Int {
        try value(
            name,
            expected: "a size in bytes such as 512, 64KiB, 1MiB or 25MB (\(range.lowerBound)–\(range.upperBound) bytes)",
            default: defaultValue
        ) { raw in
            ByteCountFormat.parse(raw).flatMap { range.contains($0) ? $0 : nil }
        }
    }

    /// One of the raw values of `Value`.
    package func choice<Value: RawRepresentable & CaseIterable>(
        _ name: String,
        default defaultValue: Value? = nil
    ) throws(ConfigurationError) -> Value
    where Value.RawValue == String {
        let choices = Value.allCases.map(\.rawValue).joined(separator: ", ")
        return try value(name, expected: "one of \(choices)", default: defaultValue) { Value(rawValue: $0.lowercased()) }
    }

    /// An absolute URL whose scheme is one of `schemes`.
    package func url(_ name: String, schemes: Set<String>, default defaultValue: URL? = nil, secret: Bool = false) throws(ConfigurationError) -> URL {
        let expected = "an absolute URL (\(schemes.sorted().map { "\($0)://" }.joined(separator: " or ")))"
        return try value(name, expected: expected, default: defaultValue, secret: secret) { raw in
            guard let url = URL(string: raw), let scheme = url.scheme?.lowercased(), schemes.contains(scheme), url.host != nil else {
                return nil
            }
            return url
        }
    }

    /// Where the apps reach Splash (the gateway), for links a service writes: an `http(s)` URL
    /// without its trailing slashes, `http://localhost:8080` when `name` is unset.
    package func publicBase(_ name: String) throws(ConfigurationError) -> String {
        var base = try url(name, schemes: ["http", "https"], default: URL(string: "http://localhost:8080")!).absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}

/// The names of the variables a `ConfigurationReader` was asked for, whether they were set or not.
package final class ConfigurationReadLog: Sendable {
    private let names = Mutex<Set<String>>([])

    package init() {}

    fileprivate func record(_ name: String) {
        names.withLock { _ = $0.insert(name) }
    }

    /// Every name asked for so far.
    package var namesRead: Set<String> {
        names.withLock { $0 }
    }
}

/// The configuration of one service, built once at start-up from the environment.
package protocol ServiceConfiguration: Sendable {
    /// The HTTP server settings (every service serves at least health and metrics).
    var http: HTTPServerSettings { get }

    /// Reads and validates every setting the service needs.
    /// - Throws: `ConfigurationError` naming the first variable that is missing or malformed.
    init(from reader: ConfigurationReader) throws(ConfigurationError)
}
