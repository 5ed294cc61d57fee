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

    /// The end-to-end headers of a client's request, as name-value pairs for the upstream call.
    static func endToEnd(_ fields: HTTPFields) -> [(String, String)] {
        endToEnd(fields.map { ($0.name.rawName, $0.value) })
    }

    /// The end-to-end headers of an upstream response, as the gateway's response carries them.
    static func endToEnd(_ headers: HTTPHeaders) -> HTTPFields {
        HTTPFields(endToEnd(headers.map { ($0.name, $0.value) }).compactMap { name, value in
            HTTPField.Name(name).map { HTTPField(name: $0, value: value) }
        })
    }

    private static func endToEnd(_ headers: [(String, String)]) -> [(String, String)] {
        let named = Set(headers.filter { $0.0.lowercased() == "connection" }
            .flatMap { $0.1.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        return headers.filter { name, _ in
            let lowered = name.lowercased()
            return !hopByHop.contains(lowered) && !named.contains(lowered)
        }
    }
}
