import HTTPTypes
import NIOHTTP1

/// What the gateway changes in the headers it passes on, in both directions (RFC 9110 §7.6.1).
enum ForwardedHeaders {
    /// Headers that describe one connection, not the message: never forwarded. Headers a
    /// `Connection` header names are dropped too. `Host` and `Content-Length` are set afresh by
    /// the client that makes the next hop.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authorization", "host", "content-length",
    ]

    /// The end-to-end headers of `fields`.
    static func endToEnd(_ fields: HTTPFields) -> [(String, String)] {
        let named = Set(fields[values: .connection].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        return fields.compactMap { field in
            let name = field.name.canonicalName
            return hopByHop.contains(name) || named.contains(name) ? nil : (field.name.rawName, field.value)
        }
    }

    /// The end-to-end headers of an upstream response, as the gateway's response carries them.
    static func endToEnd(_ headers: HTTPHeaders) -> HTTPFields {
        let named = Set(headers["connection"].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        var fields = HTTPFields()
        for (name, value) in headers {
            let lowered = name.lowercased()
            guard !hopByHop.contains(lowered), !named.contains(lowered), let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }
}
