import AsyncHTTPClient
import Foundation
import Hummingbird
import Identity
import Logging
import NIOCore
import Synchronization
import TestSupport
import Testing

@testable import KeySetClient

/// `KeySetCache` against a key set served over a real socket, as auth serves it.
@Suite("Key set cache: verified tokens")
struct KeySetCacheTests {
    static let issuer = ServiceHarness.issuer

    /// Serves `/jwks.json` with whatever keys the test sets, counting fetches.
    final class KeySetServer: Sendable {
        let keys: Mutex<[SigningKey]>
        let fetches = Atomic<Int>(0)
        private let server: Mutex<TestServer?> = Mutex(nil)

        init(_ keys: [SigningKey]) { self.keys = Mutex(keys) }

        func start() async throws -> URL {
            let router = Router()
            router.get("jwks.json") { [self] _, _ -> Response in
                fetches.add(1, ordering: .relaxed)
                let set = JSONWebKeySet(keys: keys.withLock { $0.map(\.verificationKey.jwk) })
                return Response(
                    status: .ok,
                    headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(set)))
                )
            }
            let running = try await TestServer.start(router, label: "key-set")
            server.withLock { $0 = running }
            return URL(string: "http://127.0.0.1:\(running.port)/jwks.json")!
        }

        func stop() async { await server.withLock { $0 }?.stop() }
    }

    /// A cache of `server`'s keys that fetches again on an unknown key id at most every 30 s,
    /// unless a test asks for less.
    private func withCache(_ server: KeySetServer, refreshInterval: Duration = .seconds(30), _ body: (KeySetCache) async throws -> Void) async throws
    {
        let url = try await server.start()
        let cache = KeySetCache(
            url: url,
            issuer: Self.issuer,
            refreshInterval: refreshInterval,
            client: .shared,
            logger: Logger(label: "key-set-test")
        )
        do {
            try await body(cache)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private func token(_ key: SigningKey, expiresIn: TimeInterval = 3_600) throws -> String {
        try testAccessToken(key: key, issuer: Self.issuer, expiresIn: expiresIn)
    }

    @Test func aVerifiedTokenIsFoundAgainUntilItExpires() async throws {
        let key = SigningKey.generate()
        try await withCache(KeySetServer([key])) { cache in
            let token = try token(key, expiresIn: 2)
            let claims = try await cache.verify(token)
            #expect(cache.rememberedTokenCount == 1)
            #expect(cache.verifyWithoutFetching(token) == claims)
            #expect(try await cache.verify(token) == claims)
            #expect(cache.rememberedTokenCount == 1)

            // Past its exp (whole seconds), the remembered token is refused as expired.
            try await Task.sleep(until: .now + .seconds(3))
            #expect(cache.verifyWithoutFetching(token) == nil)
            await #expect(throws: AccessTokenError.expired) { try await cache.verify(token) }
        }
    }

    @Test func aTamperedCopyOfAVerifiedTokenIsRefused() async throws {
        let key = SigningKey.generate()
        try await withCache(KeySetServer([key])) { cache in
            let token = try token(key)
            _ = try await cache.verify(token)
            let parts = token.split(separator: ".")
            // Another subject under the same signature, and the same claims under another one.
            var claims = try #require(try JSONSerialization.jsonObject(with: Base64URL.decode(parts[1])!) as? [String: Any])
            claims["sub"] = UUID().uuidString.lowercased()
            let otherSubject = "\(parts[0]).\(Base64URL.encode(try JSONSerialization.data(withJSONObject: claims))).\(parts[2])"
            let otherSignature = "\(parts[0]).\(parts[1]).\(try self.token(key).split(separator: ".")[2])"
            for forged in [otherSubject, otherSignature, token + "x"] {
                #expect(cache.verifyWithoutFetching(forged) == nil)
                await #expect(throws: AccessTokenError.self) { try await cache.verify(forged) }
            }
            #expect(cache.rememberedTokenCount == 1)
        }
    }

    @Test func tokensOfARetiredKeyAreRefusedOnceTheKeySetNoLongerHasIt() async throws {
        let (old, new) = (SigningKey.generate(), SigningKey.generate())
        let server = KeySetServer([old])
        try await withCache(server, refreshInterval: .zero) { cache in
            let oldToken = try token(old)
            _ = try await cache.verify(oldToken)
            #expect(cache.verifyWithoutFetching(oldToken) != nil)

            // auth rotates and retires the old key; a token of the new key makes the cache fetch.
            server.keys.withLock { $0 = [new] }
            _ = try await cache.verify(try token(new))
            #expect(server.fetches.load(ordering: .relaxed) == 2)
            #expect(cache.verifyWithoutFetching(oldToken) == nil)
            await #expect(throws: AccessTokenError.unknownKey(old.verificationKey.id)) { try await cache.verify(oldToken) }
        }
    }

    @Test func aFetchThatBringsTheSameKeysKeepsWhatTheyVerified() async throws {
        let key = SigningKey.generate()
        let server = KeySetServer([key])
        try await withCache(server, refreshInterval: .zero) { cache in
            _ = try await cache.verify(try token(key))
            _ = try await cache.verify(try token(key))
            // An unknown key id makes it fetch again; the same key comes back.
            await #expect(throws: AccessTokenError.self) { try await cache.verify(try token(.generate())) }
            #expect(server.fetches.load(ordering: .relaxed) == 2)
            #expect(cache.rememberedTokenCount == 2)
        }
    }

    @Test func theStoreStaysBoundedAndKeepsTheTokensInUse() throws {
        let key = SigningKey.generate()
        let verifier = AccessTokenVerifier(keys: [key.verificationKey], issuer: Self.issuer)
        let tokens = try (0..<6).map { _ in try token(key) }
        let verified = try tokens.map { try verifier.verify($0) }
        var store = VerifiedTokens(capacity: 3)
        for index in 0..<3 { store.insert(verified[index], for: tokens[index]) }
        #expect(store.claims(for: tokens[0]) == verified[0])
        store.insert(verified[3], for: tokens[3])  // the newer three become the older
        #expect(store.claims(for: tokens[0]) == verified[0])  // in use: back among the newer
        store.insert(verified[4], for: tokens[4])
        store.insert(verified[5], for: tokens[5])  // full again: the older ones not used are gone
        #expect(store.claims(for: tokens[1]) == nil)
        #expect(store.claims(for: tokens[2]) == nil)
        for index in [0, 3, 4, 5] { #expect(store.claims(for: tokens[index]) == verified[index]) }
        #expect(store.count <= 6)
        store.removeAll()
        #expect(store.count == 0 && store.claims(for: tokens[0]) == nil)
    }
}
