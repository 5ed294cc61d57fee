import Foundation

/// The parts of a `multipart/form-data` body (RFC 7578), as Storage clients upload a file: one part
/// with a file name (supabase-swift names the field "", storage3 "file") and text fields beside it
/// (`cacheControl`, `metadata`).
package struct MultipartForm: Sendable {
    package struct Part: Sendable, Equatable {
        package var name: String?
        package var filename: String?
        package var contentType: String?
        package var body: ArraySlice<UInt8>
    }

    package let parts: [Part]

    /// The boundary of a `multipart/form-data` content type, or `nil` for any other type.
    package static func boundary(of contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return (1...70).contains(value.utf8.count) ? value : nil
            }
        }
        return nil
    }

    /// `nil` when `body` is not a well-formed form with that boundary.
    package init?(_ body: [UInt8], boundary: String) {
        let delimiter = Array("--\(boundary)".utf8)
        let separator = Array("\r\n--\(boundary)".utf8)
        guard var start = Self.find(delimiter, in: body, from: 0) else { return nil }
        var parts: [Part] = []
        while true {
            var cursor = start + delimiter.count
            // `--` after a delimiter closes the form.
            if body.count >= cursor + 2, body[cursor] == UInt8(ascii: "-"), body[cursor + 1] == UInt8(ascii: "-") { break }
            guard body.count >= cursor + 2, body[cursor] == 13, body[cursor + 1] == 10 else { return nil }
            cursor += 2
            guard let headersEnd = Self.find(Array("\r\n\r\n".utf8), in: body, from: cursor),
                let end = Self.find(separator, in: body, from: headersEnd + 4)
            else { return nil }
            let headers = String(decoding: body[cursor..<headersEnd], as: UTF8.self)
            var part = Part(body: body[(headersEnd + 4)..<end])
            for line in headers.split(separator: "\r\n") {
                let field = line.split(separator: ":", maxSplits: 1)
                guard field.count == 2 else { continue }
                let value = field[1].trimmingCharacters(in: .whitespaces)
                switch field[0].lowercased() {
                case "content-disposition":
                    part.name = Self.parameter("name", in: value)
                    part.filename = Self.parameter("filename", in: value)
                case "content-type":
                    part.contentType = value
                default: break
                }
            }
            parts.append(part)
            start = end + 2
        }
        self.parts = parts
    }

    /// The uploaded file: the part with a file name, else the one part that is no known field.
    package var file: Part? {
        parts.first { $0.filename != nil } ?? parts.first { !["cacheControl", "metadata"].contains($0.name ?? "") }
    }

    /// A text field's value.
    package func field(_ name: String) -> String? {
        parts.first { $0.name == name && $0.filename == nil }.map { String(decoding: $0.body, as: UTF8.self) }
    }

    private static func parameter(_ name: String, in value: String) -> String? {
        for piece in value.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == name {
                return pair[1].count >= 2 && pair[1].hasPrefix("\"") && pair[1].hasSuffix("\"") ? String(pair[1].dropFirst().dropLast()) : pair[1]
            }
        }
        return nil
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var index = start
        let last = haystack.count - needle.count
        while index <= last {
            guard let candidate = haystack[index...last].firstIndex(of: first) else { return nil }
            if haystack[candidate..<(candidate + needle.count)].elementsEqual(needle) { return candidate }
            index = candidate + 1
        }
        return nil
    }
}
