import Logging

/// Merging and rendering of log metadata, shared by the text and JSON handlers.
enum LogMetadata {
    /// Handler metadata, then the provider's, then the event's own; later sources win.
    static func merge(
        handler: Logger.Metadata,
        provider: Logger.MetadataProvider?,
        event: Logger.Metadata?,
        error: (any Error)?
    ) -> Logger.Metadata {
        var merged = handler
        if let provided = provider?.get(), !provided.isEmpty {
            merged.merge(provided) { _, new in new }
        }
        if let event, !event.isEmpty {
            merged.merge(event) { _, new in new }
        }
        if let error, merged["error"] == nil {
            merged["error"] = .string(String(describing: error))
        }
        return merged
    }

    /// A value for a text line: bare when it has no spaces or quotes, quoted otherwise.
    static func text(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string):
            return bareOrQuoted(string)
        case .stringConvertible(let convertible):
            return bareOrQuoted(convertible.description)
        case .array(let values):
            return "[" + values.map(text).joined(separator: ",") + "]"
        case .dictionary(let dictionary):
            return "{" + dictionary.sorted { $0.key < $1.key }.map { "\($0.key)=\(text($0.value))" }.joined(separator: ",") + "}"
        }
    }

    private static func bareOrQuoted(_ string: String) -> String {
        let needsQuotes = string.isEmpty || string.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }
        return needsQuotes ? JSONText.quoted(string) : string
    }
}

/// JSON text: the minimal rendering of log lines here (no Foundation round trip on the logging
/// hot path), and what a request's JSON may hold that Postgres cannot store (JSONText+NUL.swift).
public enum JSONText {
    static func quoted(_ string: String) -> String {
        var result = "\""
        result.reserveCapacity(string.utf8.count + 2)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    static func value(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string):
            return quoted(string)
        case .stringConvertible(let convertible):
            // Numbers and booleans stay JSON numbers and booleans.
            switch convertible {
            case let number as any BinaryInteger: return String(describing: number)
            case let number as Double where number.isFinite: return String(number)
            case let flag as Bool: return flag ? "true" : "false"
            default: return quoted(convertible.description)
            }
        case .array(let values):
            return "[" + values.map(Self.value).joined(separator: ",") + "]"
        case .dictionary(let dictionary):
            return "{" + dictionary.sorted { $0.key < $1.key }.map { quoted($0.key) + ":" + Self.value($0.value) }.joined(separator: ",") + "}"
        }
    }
}
