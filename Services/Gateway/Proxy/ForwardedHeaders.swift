import Foundation
import HTTPTypes
import NIOHTTP1

/// What the gateway changes in the headers it passes on, in both directions (RFC 9110 §7.6.1).
enum ForwardedHeaders {
    /// Headers that describe one connection, not the message: never forwarded. Headers a
    /// `Connection` header names are dropped too. `Host` and `Content-Length` are set afresh for
    /// the next hop.
    static let hopByHop: Set<HTTPField.Name> = [
        .connection, .init("Keep-Alive")!, .init("Proxy-Connection")!, .te, .trailer, .transferEncoding, .upgrade,
        .proxyAuthenticate, .proxyAuthorization, .init("Host")!, .contentLength,
    ]

    /// The end-to-end fields of a client's request, for the upstream call.
    static func endToEnd(_ fields: HTTPFields) -> [HTTPField] {
        let named = connectionOptions(fields[values: .connection])
        return fields.filter { field in
            !hopByHop.contains(field.name) && (named.isEmpty || !named.contains(field.name.canonicalName))
        }
    }

    /// The end-to-end headers of an upstream answer, as the gateway's response carries them.
    static func endToEnd(_ headers: HTTPHeaders) -> HTTPFields {
        let named = connectionOptions(headers["connection"])
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        for (name, value) in headers {
            guard let name = HTTPField.Name(name), !hopByHop.contains(name), named.isEmpty || !named.contains(name.canonicalName) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        return fields
    }

    /// The lowercased header names `Connection` values list.
    private static func connectionOptions(_ values: [String]) -> Set<String> {
        guard !values.isEmpty else { return [] }
        return Set(values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
    }
}
