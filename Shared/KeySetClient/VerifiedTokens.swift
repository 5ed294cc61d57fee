import Identity

/// Access tokens already verified, with their claims, found again by the whole token string (its
/// signature included, so no other string finds them).
///
/// Two generations of at most `capacity` tokens each: a token is stored in the newer one; when that
/// is full it becomes the older one and the one before is dropped, and a token found in the older
/// one moves back to the newer. So memory stays bounded without a clock or a list per entry, and
/// the tokens clients keep using stay in. Not thread-safe: its owner holds it under a lock.
struct VerifiedTokens {
    let capacity: Int
    private var newer: [String: AccessTokenClaims] = [:]
    private var older: [String: AccessTokenClaims] = [:]

    init(capacity: Int) {
        precondition(capacity > 0, "a cache of verified tokens holds at least one")
        self.capacity = capacity
    }

    /// The claims stored for `token`, if any (their expiry is the caller's to check).
    mutating func claims(for token: String) -> AccessTokenClaims? {
        if let claims = newer[token] { return claims }
        guard let claims = older.removeValue(forKey: token) else { return nil }
        insert(claims, for: token)
        return claims
    }

    mutating func insert(_ claims: AccessTokenClaims, for token: String) {
        if newer.count >= capacity, newer[token] == nil {
            older = newer
            newer = [:]
        }
        newer[token] = claims
    }

    mutating func removeAll() {
        newer = [:]
        older = [:]
    }

    /// How many tokens are stored, in both generations.
    var count: Int { newer.count + older.count }
}
