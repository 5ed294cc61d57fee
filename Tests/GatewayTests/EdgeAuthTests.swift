import Crypto
import Foundation
import HTTPTypes
import Identity
import LocalStack
import TestSupport
import Testing

@Suite("Gateway edge authentication and rate limits") struct EdgeAuthTests {
    @Test func aValidTokenPassesAndReachesTheServiceUnchanged() async throws {
        try await GatewayHarness.with { gateway in
            let token = try gateway.token()
            let response = try await gateway.get("/v1/edits", bearer: token)
            #expect(response.status == 200)
            let headers = try #require(try response.json()["headers"] as? [String: String])
            #expect(headers["authorization"] == "Bearer \(token)")
        }
    }

    @Test func missingForgedExpiredMisissuedAndAlgorithmConfusedTokensAreRefusedAtTheEdge() async throws {
        try await GatewayHarness.with { gateway in
            let forged = try gateway.token(key: .generate())
            let expired = try gateway.token(expiresIn: -60)
            let misissued = try gateway.token(issuer: "https://evil.example/auth/v1")
            // HS256 "signed" with the public key as the HMAC secret: the classic confusion attack.
            let jwk = gateway.upstream.key.verificationKey.jwk
            let header = Base64URL.encode(Data(#"{"alg":"HS256","typ":"JWT","kid":"\#(jwk.kid ?? "")"}"#.utf8))
            let valid = try gateway.token()
            let claims = valid.split(separator: ".")[1]
            let secret = SymmetricKey(data: try JSONEncoder().encode(jwk))
            let mac = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(claims)".utf8), using: secret)
            let confused = "\(header).\(claims).\(Base64URL.encode(Data(mac)))"
            let none = "\(Base64URL.encode(Data(#"{"alg":"none"}"#.utf8))).\(claims)."
            let upstreamCalls = gateway.upstream.requestCount

            let missing = try await gateway.get("/v1/edits")
            #expect(missing.status == 401)
            #expect(missing.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
            for token in [forged, expired, misissued, confused, none, "not.a.token", valid + "x"] {
                let response = try await gateway.get("/v1/edits", bearer: token)
                #expect(response.status == 401, "token \(token.prefix(24))… answered \(response.status)")
                #expect(response.headers["www-authenticate"]?.contains("invalid_token") == true)
                #expect(response.headers["content-type"] == "application/problem+json")
            }
            #expect(try await gateway.get("/v1/edits", bearer: expired).json()["detail"] as? String == "The access token has expired; refresh it.")
            // None of them reached the service.
            #expect(gateway.upstream.requestCount == upstreamCalls)
        }
    }

    @Test func storageNeedsAUserExceptToDownloadBySignedLinkOrFromAPublicBucket() async throws {
        try await GatewayHarness.with(alsoRouting: ["GATEWAY_SOCIAL_URL"]) { gateway in
            let anonKey = "an-anon-key"
            let anonymous = [("apikey", anonKey), ("Authorization", "Bearer \(anonKey)")]
            let before = gateway.upstream.requestCount
            // Uploads, lists and private downloads need a user: the anon key (sent as the bearer
            // by Supabase clients before sign-in) is not one, and no token at all is refused too.
            for (method, path) in [
                (HTTPRequest.Method.post, "/storage/v1/object/posts/someone/a.jpg"),
                (.post, "/storage/v1/object/list/posts"),
                (.get, "/storage/v1/object/authenticated/posts/someone/a.jpg"),
                (.get, "/storage/v1/object/posts/someone/a.jpg"),
                (.get, "/storage/v1/render/image/authenticated/posts/someone/a.jpg?width=64"),
                (.post, "/storage/v1/upload/resumable"),
                (.patch, "/storage/v1/upload/resumable/\(UUID().uuidString)"),
            ] {
                for headers in [anonymous, []] {
                    let response = try await gateway.app.request(method, path, headers: headers)
                    #expect(response.status == 401, "\(method) \(path) answered \(response.status)")
                }
            }
            #expect(gateway.upstream.requestCount == before)
            // A signed link and a public bucket are read without a user; so is their HEAD.
            for (method, path) in [
                (HTTPRequest.Method.get, "/storage/v1/object/sign/posts/someone/a.jpg?token=t"),
                (.head, "/storage/v1/object/sign/posts/someone/a.jpg?token=t"),
                (.get, "/storage/v1/object/public/avatars/someone/me.png"),
                (.get, "/storage/v1/render/image/public/avatars/someone/me.png?width=64"),
                (.get, "/storage/v1/render/image/sign/posts/someone/a.jpg?token=t"),
                (.options, "/storage/v1/upload/resumable"),
            ] {
                let response = try await gateway.app.request(method, path, headers: anonymous)
                #expect(response.status == 200, "\(method) \(path) answered \(response.status)")
            }
            // A user's token passes, and a forged one is refused even where anonymous calls pass.
            #expect(
                try await gateway.app.request(
                    .post,
                    "/storage/v1/object/list/posts",
                    headers: [("apikey", anonKey), ("Authorization", "Bearer \(try gateway.token())")]
                ).status == 200
            )
            #expect(
                try await gateway.get("/storage/v1/object/public/avatars/someone/me.png", bearer: try gateway.token(key: .generate())).status == 401
            )
            // A signed upload URL is its own credential: the bearer beside it (a background
            // upload's session may have expired) is not read; making one needs a user.
            for bearer in ["not-a-token", try gateway.token(key: .generate())] {
                let upload = try await gateway.app.request(
                    .put,
                    "/storage/v1/object/upload/sign/posts/someone/a.jpg?token=t",
                    headers: [("apikey", anonKey), ("Authorization", "Bearer \(bearer)")]
                )
                #expect(upload.status == 200)
            }
            #expect(try await gateway.app.request(.post, "/storage/v1/object/upload/sign/posts/someone/a.jpg", headers: anonymous).status == 401)
        }
    }

    @Test func theDataAPITakesAnonymousCallsChecksOtherTokensAndTheAnonKeyAndAnswersInPostgRESTsShape() async throws {
        try await GatewayHarness.with(["GATEWAY_ANON_KEY": "the-anon-key"], alsoRouting: ["GATEWAY_SOCIAL_URL", "GATEWAY_TRACKING_URL"]) { gateway in
            let anonymous = [("apikey", "the-anon-key"), ("Authorization", "Bearer the-anon-key")]
            let before = gateway.upstream.requestCount
            // The anon key as the bearer, or no bearer, is the anonymous caller: passed on.
            for headers in [anonymous, [("apikey", "the-anon-key")]] {
                for path in ["/rest/v1/profiles?select=id", "/rest/v1/posts?limit=1", "/rest/v1/restaurants"] {
                    let response = try await gateway.app.request(.get, path, headers: headers)
                    #expect(response.status == 200, "\(path) answered \(response.status)")
                }
            }
            #expect(gateway.upstream.requestCount == before + 6)
            // Another apikey (or none), a forged token: 401, in PostgREST's shape, never passed on.
            for headers in [
                [("apikey", "another-key")], [], [("apikey", "the-anon-key"), ("Authorization", "Bearer \(try gateway.token(key: .generate()))")],
            ] {
                let response = try await gateway.app.request(.get, "/rest/v1/likes", headers: headers)
                #expect(response.status == 401)
                let body = try response.json()
                #expect(
                    body["code"] as? String == "PGRST301" && body["message"] is String && body["hint"] is NSNull
                        && body.keys.sorted() == ["code", "details", "hint", "message"],
                    "\(body)"
                )
            }
            #expect(gateway.upstream.requestCount == before + 6)
            // A user's token passes; a table no service owns is PostgREST's 404.
            #expect(
                try await gateway.app.request(
                    .post,
                    "/rest/v1/likes",
                    headers: [("apikey", "the-anon-key"), ("Authorization", "Bearer \(try gateway.token())")]
                ).status == 200
            )
            // As PostgREST words it: the table named, no hint (never a problem's type URI).
            let unknown = try await gateway.app.request(.get, "/rest/v1/secrets?select=*", headers: anonymous)
            let body = try unknown.json()
            #expect(unknown.status == 404 && body["code"] as? String == "PGRST205")
            #expect(body["message"] as? String == "Could not find the table 'public.secrets' in the schema cache")
            #expect(body["hint"] is NSNull && body["details"] is NSNull, "\(body)")
            let function = try await gateway.app.request(.post, "/rest/v1/rpc/launch_missiles", headers: anonymous)
            #expect(try function.json()["code"] as? String == "PGRST202")
            #expect(try function.json()["message"] as? String == "Could not find the function public.launch_missiles in the schema cache")
        }
    }

    @Test func tokensWithUnknownKeyIDsRefetchTheKeySetAtMostOncePerInterval() async throws {
        try await GatewayHarness.with(["GATEWAY_JWKS_REFRESH_INTERVAL": "30s"]) { gateway in
            #expect(try await gateway.get("/v1/edits", bearer: try gateway.token()).status == 200)
            let fetches = gateway.upstream.keySetFetchCount
            #expect(fetches >= 1)
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await gateway.get("/v1/edits", bearer: try gateway.token(key: .generate())).status }
                }
                for try await status in group { #expect(status == 401) }
            }
            #expect(gateway.upstream.keySetFetchCount <= fetches + 1)
        }
    }

    @Test func aCallWhoseTokenNeedsTheRotatedKeyWaitsForItWithItsBody() async throws {
        try await GatewayHarness.with(["GATEWAY_JWKS_REFRESH_INTERVAL": "100ms"]) { gateway in
            #expect(try await gateway.get("/v1/edits", bearer: try gateway.token()).status == 200)
            let fetches = gateway.upstream.keySetFetchCount
            // Past the interval since the last fetch (the one at start may have just ended).
            try await Task.sleep(for: .milliseconds(300))
            // auth rotates its key: the first token signed with the new one makes the gateway
            // fetch the key set, while the upload's body is already on its way.
            let rotated = gateway.upstream.rotateKey()
            let body = Data(repeating: 0x42, count: 300_000)
            let upload = try await gateway.app.request(
                .post,
                "/v1/uploads",
                headers: [("Authorization", "Bearer \(try gateway.token(key: rotated))")],
                body: .bytes(body)
            )
            #expect(upload.status == 200)
            #expect(try upload.json()["bodySize"] as? Int == body.count)
            #expect(gateway.upstream.keySetFetchCount == fetches + 1)
        }
    }

    @Test func whileAuthsKeysCannotBeFetchedTokensGet503NotA401AndTheKeysComeWhenAuthIsBack() async throws {
        let port = freePort()
        let closed = try #require(ClosedPort(port))
        let auth = FakeUpstream()
        // Only the key set is down; the services' routes answer. Request-driven fetches are
        // throttled to one per 30 s, so what brings the keys is the gateway's own retrying.
        try await GatewayHarness.with([
            "GATEWAY_JWKS_URL": "http://127.0.0.1:\(port)/auth/v1/.well-known/jwks.json",
            "GATEWAY_JWKS_REFRESH_INTERVAL": "30s",
        ]) { gateway in
            let token = try gateway.token(key: auth.key)
            let refused = try await gateway.get("/v1/edits", bearer: token)
            #expect(refused.status == 503)
            #expect(try refused.json()["type"] as? String == "urn:splash:problem:token-check-unavailable")
            #expect(refused.headers["retry-after"] != nil)
            #expect(refused.headers["www-authenticate"] == nil)
            let socket = RealtimeSocket(url: gateway.webSocketURL, token: token)
            #expect(try await socket.waitForClose().code == 1013)
            // What is wrong with a token itself is told without keys.
            #expect(try await gateway.get("/v1/edits", bearer: "not.a.token").status == 401)

            closed.release()
            try await auth.start(port: port)
            try await waitUntilReady("the gateway's key set", timeout: .seconds(30)) { auth.keySetFetchCount > 0 }
            #expect(try await gateway.get("/v1/edits", bearer: token).status == 200)
            #expect(try await gateway.get("/v1/edits", bearer: try gateway.token()).status == 401)
            #expect(auth.keySetFetchCount == 1)
        }
        await auth.stop()
    }

    @Test func eachUserHasTheirOwnBucketAndALimitedOneGets429WithRateLimitHeaders() async throws {
        try await GatewayHarness.with(["GATEWAY_RATE_LIMIT_EDIT_RENDER": "3/1m"]) { gateway in
            let alice = try gateway.token()
            var remaining: [String?] = []
            for _ in 0..<3 {
                let response = try await gateway.get("/v1/edits", bearer: alice)
                #expect(response.status == 200)
                #expect(response.headers["ratelimit-limit"] == "3")
                remaining.append(response.headers["ratelimit-remaining"])
            }
            #expect(remaining == ["2", "1", "0"])
            let limited = try await gateway.get("/v1/edits", bearer: alice)
            #expect(limited.status == 429)
            #expect(limited.headers["retry-after"].flatMap(Int.init).map { (1...20).contains($0) } == true)
            #expect(limited.headers["ratelimit-remaining"] == "0")
            #expect(try limited.json()["type"] as? String == "urn:splash:problem:rate-limited")
            // Another user is not affected.
            #expect(try await gateway.get("/v1/edits", bearer: try gateway.token()).status == 200)
        }
    }
}
