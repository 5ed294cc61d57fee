import Crypto
import Foundation
import Identity
import Testing

@Suite("Access tokens: ES256 JWTs signed and verified locally")
struct AccessTokenTests {
    let key = SigningKey.generate()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func claims(expiresIn seconds: Int = 3_600, issuer: String = "http://auth.test/auth/v1") -> AccessTokenClaims {
        let issuedAt = Int(now.timeIntervalSince1970)
        return AccessTokenClaims(
            issuer: issuer,
            subject: UUID().uuidString.lowercased(),
            expiresAt: issuedAt + seconds,
            issuedAt: issuedAt,
            email: "ana@example.com",
            appMetadata: ["provider": .string("email"), "role": .string("driver")],
            userMetadata: ["username": .string("ana")],
            sessionID: UUID().uuidString.lowercased(),
            authenticationMethods: [.init(method: "password", timestamp: issuedAt)]
        )
    }

    func verifier(_ keys: [VerificationKey]? = nil) -> AccessTokenVerifier {
        AccessTokenVerifier(keys: keys ?? [key.verificationKey], issuer: "http://auth.test/auth/v1")
    }

    @Test func aSignedTokenVerifiesAndCarriesItsClaims() throws {
        let original = claims()
        let token = try AccessTokenSigner(key: key).sign(original)
        let verified = try verifier().verify(token, now: now)
        #expect(verified == original)
        #expect(verified.splashRole == "driver")
    }

    @Test func theHeaderNamesTheAlgorithmAndTheKey() throws {
        let token = try AccessTokenSigner(key: key).sign(claims())
        let header = try #require(Base64URL.decode(String(token.split(separator: ".")[0])))
        let object = try #require(try JSONSerialization.jsonObject(with: header) as? [String: String])
        #expect(object == ["alg": "ES256", "kid": key.id, "typ": "JWT"])
    }

    @Test func anExpiredTokenIsRefused() throws {
        let token = try AccessTokenSigner(key: key).sign(claims(expiresIn: -1))
        #expect(throws: AccessTokenError.expired) { try verifier().verify(token, now: now) }
    }

    @Test func aTamperedPayloadIsRefused() throws {
        let token = try AccessTokenSigner(key: key).sign(claims())
        var parts = token.split(separator: ".").map(String.init)
        var forged = claims()
        forged.appMetadata["role"] = .string("admin")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        parts[1] = Base64URL.encode(try encoder.encode(forged))
        #expect(throws: AccessTokenError.badSignature) { try verifier().verify(parts.joined(separator: "."), now: now) }
    }

    @Test func unsignedAndSymmetricTokensAreRefused() throws {
        let token = try AccessTokenSigner(key: key).sign(claims())
        let parts = token.split(separator: ".").map(String.init)
        for alg in ["none", "HS256"] {
            let header = Base64URL.encode(Data(#"{"alg":"\#(alg)","kid":"\#(key.id)"}"#.utf8))
            #expect(throws: AccessTokenError.unsupportedAlgorithm(alg)) {
                try verifier().verify("\(header).\(parts[1]).", now: now)
            }
        }
    }

    @Test func aTokenOfAnotherKeyIsRefused() throws {
        let other = SigningKey.generate()
        let token = try AccessTokenSigner(key: other).sign(claims())
        #expect(throws: AccessTokenError.unknownKey(other.id)) { try verifier().verify(token, now: now) }
    }

    @Test func duringARotationTokensOfBothKeysVerify() throws {
        let next = SigningKey.generate()
        let both = verifier([next.verificationKey, key.verificationKey])
        _ = try both.verify(try AccessTokenSigner(key: key).sign(claims()), now: now)
        _ = try both.verify(try AccessTokenSigner(key: next).sign(claims()), now: now)
    }

    @Test func anotherIssuerIsRefused() throws {
        let token = try AccessTokenSigner(key: key).sign(claims(issuer: "http://elsewhere"))
        #expect(throws: AccessTokenError.wrongIssuer) { try verifier().verify(token, now: now) }
    }

    @Test func garbageIsMalformed() {
        for token in ["", "a.b", "a.b.c", "....", "eyJhbGciOiJFUzI1NiJ9.%%%.abc"] {
            #expect(throws: AccessTokenError.malformed) { try verifier().verify(token, now: now) }
        }
    }

    @Test func theJWKSRoundTripsTheKeyAndItsThumbprint() throws {
        let set = JSONWebKeySet(keys: [key.verificationKey.jwk])
        let decoded = try JSONDecoder().decode(JSONWebKeySet.self, from: try JSONEncoder().encode(set))
        let keys = decoded.verificationKeys
        #expect(keys.map(\.id) == [key.id])
        let token = try AccessTokenSigner(key: key).sign(claims())
        _ = try verifier(keys).verify(token, now: now)
        // The same key read back from its PEM has the same kid.
        #expect(try SigningKey(pem: key.pem).id == key.id)
    }
}
