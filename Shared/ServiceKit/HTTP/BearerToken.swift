import HTTPTypes

extension HTTPFields {
    /// The token of an `Authorization: Bearer <token>` header, if there is one.
    package var bearerToken: String? {
        Self.bearerToken(in: self[.authorization])
    }

    /// The token of an `Authorization` value of the form `Bearer <token>` (the scheme in any case,
    /// spaces and tabs around the token ignored).
    package static func bearerToken(in authorization: String?) -> String? {
        guard var value = authorization?.utf8[...], value.count > 7,
            zip(value.prefix(7), "bearer ".utf8).allSatisfy({ $0 == $1 || $0 | 0x20 == $1 })
        else { return nil }
        value = value.dropFirst(7)
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = value.first, isBlank(first) { value = value.dropFirst() }
        while let last = value.last, isBlank(last) { value = value.dropLast() }
        return value.isEmpty ? nil : String(Substring(value))
    }
}

extension HTTPField.Name {
    /// The Supabase clients' project key (the anon key), sent on every call.
    package static let apiKey = Self("apikey")!
}
