import AsyncHTTPClient
import Foundation
import HTTPEdge
import LocalStack
import NIOCore
import TestSupport
import Testing

@testable import Gateway

@Suite("Gateway routing and proxying") struct ProxyTests {
    @Test func aRequestReachesItsServiceWithForwardingHeadersAndWithoutHopByHopHeaders() async throws {
        try await GatewayHarness.with { gateway in
            let response = try await gateway.get(
                "/v1/photos?query=Mountain%20lake&page=2",
                headers: [
                    ("Connection", "X-Client-Private"), ("X-Client-Private", "1"), ("Keep-Alive", "timeout=5"),
                    ("X-Forwarded-For", "6.6.6.6"), ("X-Request-Id", "trace-42"), ("Accept", "application/json"),
                ]
            )
            #expect(response.status == 200)
            let echo = try response.json()
            #expect(echo["uri"] as? String == "/v1/photos?query=Mountain%20lake&page=2")
            let headers = try #require(echo["headers"] as? [String: String])
            // An untrusted client cannot write its own forwarding chain.
            #expect(headers["x-forwarded-for"] == "127.0.0.1")
            #expect(headers["x-forwarded-proto"] == "http")
            #expect(headers["x-request-id"] == "trace-42")
            #expect(headers["accept"] == "application/json")
            #expect(headers["x-client-private"] == nil && headers["keep-alive"] == nil)
            #expect(response.headers["x-request-id"] == "trace-42")
            #expect(response.headers["x-upstream"] == "fake")
            // The upstream's Connection header named it: it stops at the gateway.
            #expect(response.headers["x-upstream-private"] == nil)
        }
    }

    @Test func authRoutesPassThroughWithTheClientsBearerUntouched() async throws {
        try await GatewayHarness.with { gateway in
            // GoTrue clients send the anonymous key as a bearer: not a user token, not refused.
            let body = Data(#"{"email":"a@example.com","password":"x"}"#.utf8)
            let response = try await gateway.app.request(
                .post,
                "/auth/v1/token?grant_type=password",
                headers: [
                    ("Authorization", "Bearer anon-key"), ("Content-Type", "application/json"),
                ],
                body: .bytes(body)
            )
            #expect(response.status == 200)
            let echo = try response.json()
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["authorization"] == "Bearer anon-key")
            #expect(echo["bodySize"] as? Int == body.count)
        }
    }

    @Test func largeBodiesStreamThroughAndOversizedOnesAreRefused() async throws {
        try await GatewayHarness.with(["GATEWAY_MAX_BODY_EDIT_RENDER": "4MiB"]) { gateway in
            let token = try gateway.token()
            let upload = try await gateway.app.request(
                .post,
                "/v1/uploads",
                headers: [("Authorization", "Bearer \(token)")],
                body: .bytes(Data(count: 3 << 20))
            )
            #expect(upload.status == 200)
            #expect(try upload.json()["bodySize"] as? Int == 3 << 20)
            let tooLarge = try await gateway.app.request(
                .post,
                "/v1/uploads",
                headers: [("Authorization", "Bearer \(token)")],
                body: .bytes(Data(count: 5 << 20))
            )
            #expect(tooLarge.status == 413)
            #expect(tooLarge.headers["content-type"] == "application/problem+json")
        }
    }

    @Test func whatTheGatewayRefusesUnderASupabasePathIsInThatProtocolsErrorShape() async throws {
        try await GatewayHarness.with(["GATEWAY_MAX_BODY_AUTH": "1KiB", "GATEWAY_MAX_BODY_STORAGE": "1KiB", "GATEWAY_MAX_BODY_DATA_SOCIAL": "1KiB"]) {
            gateway in
            let body = HTTPClientRequest.Body.bytes(Data(count: 4 << 10))
            // GoTrue's older shape, and its newer one when the client names an API version.
            let legacy = try await gateway.app.request(.post, "/auth/v1/signup", headers: [("Content-Type", "application/json")], body: body)
            #expect(legacy.status == 413)
            #expect(legacy.headers["content-type"] == "application/json")
            #expect(legacy.headers["x-sb-error-code"] == "request_too_large")
            let legacyJSON = try legacy.json()
            #expect(legacyJSON["code"] as? Int == 413)
            #expect(legacyJSON["error_code"] as? String == "request_too_large")
            #expect((legacyJSON["msg"] as? String)?.isEmpty == false)
            let versioned = try await gateway.app.request(
                .post,
                "/auth/v1/signup",
                headers: [
                    ("Content-Type", "application/json"), ("X-Supabase-Api-Version", "2024-01-01"),
                ],
                body: body
            )
            #expect(versioned.headers["x-supabase-api-version"] == "2024-01-01")
            let versionedJSON = try versioned.json()
            #expect(versionedJSON["code"] as? String == "request_too_large")
            #expect((versionedJSON["message"] as? String)?.isEmpty == false)
            // Storage's shape, its status a string; PostgREST's.
            let upload = try await gateway.app.request(
                .post,
                "/storage/v1/object/posts/a/b.jpg",
                headers: [("Content-Type", "image/jpeg")],
                body: body
            )
            #expect(upload.status == 413)
            let uploadJSON = try upload.json()
            #expect(uploadJSON["statusCode"] as? String == "413")
            #expect(uploadJSON["error"] as? String == "EntityTooLarge")
            let insert = try await gateway.app.request(.post, "/rest/v1/posts", headers: [("Content-Type", "application/json")], body: body)
            #expect(insert.status == 413)
            #expect(try insert.json()["code"] as? String == "PGRST413")
            // Elsewhere: problem JSON.
            let other = try await gateway.app.request(.post, "/v1/posts", headers: [("Content-Type", "application/json")], body: body)
            #expect(other.headers["content-type"] == "application/problem+json")
        }
    }

    @Test(arguments: ["", "https://app.example.com"]) func aPreflightIsAnsweredByCORSNeverRefusedForItsMissingToken(origins: String) async throws {
        try await GatewayHarness.with(["GATEWAY_CORS_ORIGINS": origins]) { gateway in
            let preflight = try await gateway.app.request(
                .options,
                "/v1/edits",
                headers: [
                    ("Origin", "https://elsewhere.example"), ("Access-Control-Request-Method", "POST"),
                    ("Access-Control-Request-Headers", "authorization"),
                ]
            )
            #expect(preflight.status == 403)
            #expect(preflight.headers["access-control-allow-origin"] == nil)
            #expect(try preflight.json()["type"] as? String == "urn:splash:problem:origin-not-allowed")
            // A call with a token still reaches edge authentication as before.
            #expect(try await gateway.app.request(.get, "/v1/edits", headers: [("Origin", "https://elsewhere.example")]).status == 401)
        }
    }

    @Test func a20MBUploadReachesItsServiceWhileTheClientIsStillSendingIt() async throws {
        // The harness's 2 s for edit-render is for the slow-route test; a 20 MB upload in a debug
        // build under the whole suite's load may take longer.
        try await GatewayHarness.with(["GATEWAY_TIMEOUT_EDIT_RENDER": "30s"]) { gateway in
            let token = try gateway.token()
            let (chunks, sender) = AsyncStream.makeStream(of: ByteBuffer.self)
            let upstream = gateway.upstream
            let sending = Task {
                defer { sender.finish() }
                for index in 0..<20 {
                    sender.yield(ByteBuffer(repeating: 0x5A, count: 1 << 20))
                    if index == 3 {
                        // A gateway that held the body whole would forward nothing before the
                        // last byte: the service must already be reading the first megabytes.
                        try await waitUntilReady("the service receiving the upload", timeout: .seconds(20)) {
                            upstream.bodyBytesReceived >= 1 << 20
                        }
                    }
                }
            }
            let upload = try await gateway.app.request(
                .post,
                "/v1/uploads",
                headers: [("Authorization", "Bearer \(token)")],
                body: .stream(chunks, length: .known(Int64(20 << 20)))
            )
            try await sending.value
            #expect(upload.status == 200)
            #expect(try upload.json()["bodySize"] as? Int == 20 << 20)
        }
    }

    @Test func anUpstreamThatIsDownFailsFastWhileOtherRoutesWorkAndItRecovers() async throws {
        let catalog = FakeUpstream()
        try await catalog.start()
        let port = catalog.port
        let auth = FakeUpstream()
        try await auth.start()
        try await GatewayHarness.with(["GATEWAY_PHOTO_CATALOG_URL": "http://127.0.0.1:\(port)"], upstream: auth) { gateway in
            #expect(try await gateway.get("/v1/photos").status == 200)
            await catalog.stop()
            // Kept bound while down: another test's server given this port would answer for it.
            let closed = try #require(ClosedPort(port))
            let start = ContinuousClock.now
            let down = try await gateway.get("/v1/photos")
            #expect(down.status == 503)
            #expect(try down.json()["type"] as? String == "urn:splash:problem:upstream-unavailable")
            #expect(down.headers["retry-after"] != nil)
            #expect(ContinuousClock.now - start < .seconds(3))
            #expect(try await gateway.get("/auth/v1/settings").status == 200)
            closed.release()
            try await catalog.start(port: port)
            #expect(try await gateway.get("/v1/photos").status == 200)
        }
        await auth.stop()
        await catalog.stop()
    }

    @Test func anUpstreamThatDoesNotAnswerInTimeGets504() async throws {
        try await GatewayHarness.with { gateway in
            let token = try gateway.token()
            // A first call parks a connection, so the slow call goes over a reused one.
            #expect(try await gateway.get("/v1/edits", bearer: token).status == 200)
            let start = ContinuousClock.now
            // The service would answer after 12 s; the gateway's timeout is 2 s.
            let response = try await gateway.get("/v1/edits/stalled", bearer: token)
            #expect(response.status == 504)
            #expect(try response.json()["type"] as? String == "urn:splash:problem:upstream-timeout")
            #expect(ContinuousClock.now - start < .seconds(8))
        }
    }

    @Test func aCallInProgressWhenTheGatewayStopsStillGetsItsAnswer() async throws {
        try await GatewayHarness.with(["GATEWAY_TIMEOUT_EDIT_RENDER": "10s"]) { gateway in
            let token = try gateway.token()
            #expect(try await gateway.get("/v1/edits", bearer: token).status == 200)
            async let slow = gateway.get("/v1/edits/slow", bearer: token)
            try await Task.sleep(for: .milliseconds(500))
            await gateway.app.beginShutdown()
            // The service answers after 3 s; the stopping gateway waits for it rather than cutting
            // the client off.
            let answer = try await slow
            #expect(answer.status == 200)
            #expect(answer.text == "late")
        }
    }

    @Test func answersSmallAndLargeArriveWholeAndByteForByte() async throws {
        try await GatewayHarness.with { gateway in
            // Below the size read whole before it is passed on, at it, and well above (streamed).
            for count in [0, 1_000, EdgeLimits().wholeAnswerLimit, EdgeLimits().wholeAnswerLimit + 1, 6 << 20] {
                let response = try await gateway.get("/v1/media/bytes/\(count)")
                #expect(response.status == 200)
                #expect(response.headers["content-length"] == String(count))
                #expect(response.body.count == count)
                #expect(response.body == FakeUpstream.patternData(count), "\(count) bytes")
            }
        }
    }

    @Test func sequentialCallsReuseOneKeptAliveConnection() async throws {
        try await GatewayHarness.with { gateway in
            for _ in 0..<20 {
                #expect(try await gateway.get("/v1/photos").status == 200)
                #expect(try await gateway.get("/v1/media/bytes/200000").body.count == 200_000)
            }
            // Every upstream is the same fake here, so one pool serves all; each event loop keeps
            // its own connections, and the test client's calls may arrive on either.
            let opened = try await gateway.metric(#"gateway_upstream_connections_opened_total{upstream="auth"}"#)
            #expect((1...ProcessInfo.processInfo.activeProcessorCount).contains(Int(opened)), "\(opened) connections for 40 calls")
        }
    }

    @Test func aConnectionTheUpstreamClosedWhileIdleIsNotUsedAgain() async throws {
        let upstream = FakeUpstream()
        try await upstream.start()
        let port = upstream.port
        try await GatewayHarness.with(upstream: upstream) { gateway in
            #expect(try await gateway.get("/v1/photos").status == 200)
            #expect(try await gateway.app.request(.post, "/v1/photos/x/download", body: .bytes(Data("{}".utf8))).status == 200)
            // A restart closes the kept-alive connections; no call may fail for it, not even a POST.
            await upstream.stop()
            try await upstream.start(port: port)
            #expect(try await gateway.get("/v1/photos").status == 200)
            #expect(try await gateway.app.request(.post, "/v1/photos/x/download", body: .bytes(Data("{}".utf8))).status == 200)
        }
        await upstream.stop()
    }

    @Test func aKeptAliveConnectionTheServiceClosesAsItIsUsedFailsNoCall() async throws {
        // The first connection answers once, then closes on the next request without answering;
        // the second answers.
        let service = try ScriptedUpstream([.init(answers: ["first"], closesAfter: true), .init(answers: ["second"], closesAfter: false)])
        defer { service.stop() }
        try await GatewayHarness.with(["GATEWAY_PHOTO_CATALOG_URL": "http://127.0.0.1:\(service.port)"]) { gateway in
            #expect(try await gateway.get("/v1/photos").text == "first")
            // Sent on the kept-alive connection, which closes unanswered: the service never handled
            // it, so it is made again over a new connection.
            let second = try await gateway.get("/v1/photos")
            #expect(second.status == 200)
            #expect(second.text == "second")
            #expect(service.requestCount == 3)
            #expect(try await gateway.get("/metrics").text.contains("gateway_upstream_errors_total{") == false)
        }
    }

    @Test func anUpstreamThatBreaksOffItsAnswerGets502OrAnIncompleteBody() async throws {
        try await GatewayHarness.with { gateway in
            // Small answers are read whole first, so the gateway can still answer 502.
            let small = try await gateway.get("/v1/media/broken/5000")
            #expect(small.status == 502)
            #expect(try small.json()["type"] as? String == "urn:splash:problem:upstream-failed")
            // A large one is already streaming: the client must see it end short, never complete.
            let large: TestResponse? = try? await gateway.get("/v1/media/broken/\(1 << 20)")
            #expect(large.map { $0.body.count < 1 << 20 } ?? true)
            // The gateway and its pool are fine afterwards.
            #expect(try await gateway.get("/v1/media/bytes/100").body.count == 100)
        }
    }

    @Test func aProxiedCallIsRecordedAndAnsweredWithTheGatewaysOwnFields() async throws {
        try await GatewayHarness.with { gateway in
            let token = try gateway.token()
            var last: TestResponse?
            for _ in 0..<10 {
                last = try await gateway.get("/v1/photos?page=2", bearer: token, headers: [("X-Request-Id", "client-chosen-id")])
            }
            #expect(try await gateway.metric(#"http_requests_total{method="GET",route="/v1/photos/**",status="200"}"#) == 10)
            let answer = try #require(last)
            #expect(answer.status == 200)
            #expect(answer.headers["x-request-id"] == "client-chosen-id")
            #expect(answer.headers["server"] == "gateway" && answer.headers["date"] != nil)
            #expect(answer.headers["ratelimit-limit"] == "600" && answer.headers["ratelimit-remaining"] != nil)
            #expect(answer.headers["x-upstream"] == "fake" && answer.headers["x-upstream-private"] == nil)
            let echo = try answer.json()
            #expect(echo["uri"] as? String == "/v1/photos?page=2")
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["x-request-id"] == "client-chosen-id" && headers["authorization"] == "Bearer \(token)")
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrderProxiedOrTheGatewaysOwn() async throws {
        try await GatewayHarness.with { gateway in
            let requests = [
                "GET /v1/media/bytes/10 HTTP/1.1\r\nHost: gateway\r\n\r\n",
                "POST /v1/photos/x/download HTTP/1.1\r\nHost: gateway\r\nContent-Length: 2\r\n\r\n{}",
                "GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n",
                "GET /v1/media/bytes/20 HTTP/1.1\r\nHost: gateway\r\n\r\n",
                "GET /v1/media/bytes/\(EdgeLimits().wholeAnswerLimit + 30) HTTP/1.1\r\nHost: gateway\r\n\r\n",
                "GET /metrics HTTP/1.1\r\nHost: gateway\r\n\r\n",
                "DELETE /v1/photos/x HTTP/1.1\r\nHost: gateway\r\n\r\n",
                "GET /v1/media/bytes/40 HTTP/1.1\r\nHost: gateway\r\n\r\n",
            ]
            let connection = try RawHTTPConnection(port: gateway.app.port)
            // All in one write: the gateway reads them together.
            try await connection.send(requests.joined())
            let answers = try await connection.read(requests.count)
            #expect(answers.map(\.status) == [200, 200, 200, 200, 200, 200, 200, 200])
            #expect(answers[0].body.count == 10)
            #expect(answers[1].body.contains("\"method\":\"POST\"".utf8))
            #expect(String(decoding: answers[2].body, as: UTF8.self).contains("ok"))
            #expect(answers[3].body.count == 20)
            #expect(answers[4].body == [UInt8](FakeUpstream.patternData(EdgeLimits().wholeAnswerLimit + 30)))
            #expect(String(decoding: answers[5].body, as: UTF8.self).contains("http_requests_total"))
            #expect(answers[6].body.contains("\"method\":\"DELETE\"".utf8))
            #expect(answers[7].body.count == 40)
        }
    }

    @Test func answersFramedEveryWayArriveAsTheServiceSentThem() async throws {
        // One answer per connection, each closed after it (a parked connection the service closed
        // is not used, or the call is made again over a new one).
        let service = try ScriptedUpstream([
            .sends("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5;x=1\r\nworld\r\n0\r\n\r\n"),
            .sends("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nuntil the end"),
            .sends("HTTP/1.1 204 No Content\r\nX-Kind: none\r\n\r\n"),
            .sends(
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close, X-Private\r\nX-Private: 1\r\nKeep-Alive: timeout=5\r\nX-Request-Id: upstream-id\r\nServer: upstream\r\n\r\nafter"
            ),
            .sends("HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n"),
        ])
        defer { service.stop() }
        try await GatewayHarness.with(["GATEWAY_PHOTO_CATALOG_URL": "http://127.0.0.1:\(service.port)"]) { gateway in
            let chunked = try await gateway.get("/v1/photos/1")
            #expect(chunked.status == 200 && chunked.text == "hello world" && chunked.headers["content-type"] == "text/plain")
            let untilClose = try await gateway.get("/v1/photos/2")
            #expect(untilClose.status == 200 && untilClose.text == "until the end")
            let noContent = try await gateway.get("/v1/photos/3")
            #expect(noContent.status == 204 && noContent.body.isEmpty && noContent.headers["x-kind"] == "none")
            let named = try await gateway.get("/v1/photos/4", headers: [("X-Request-Id", "client-id")])
            #expect(named.status == 200 && named.text == "after")
            // What the service's Connection header named, and hop-by-hop fields, stop at the gateway;
            // the request id and Server are the gateway's.
            #expect(named.headers["x-private"] == nil && named.headers["keep-alive"] == nil)
            #expect(named.headers["x-request-id"] == "client-id" && named.headers["server"] == "gateway")
            let malformed = try await gateway.get("/v1/photos/5")
            #expect(malformed.status == 502)
            #expect(try malformed.json()["type"] as? String == "urn:splash:problem:upstream-failed")
        }
    }

    @Test func chunkedUploadsAreForwardedAsTheyComeAndCountedAgainstTheLimit() async throws {
        try await GatewayHarness.with(["GATEWAY_MAX_BODY_PHOTO_CATALOG": "64KiB"]) { gateway in
            let connection = try RawHTTPConnection(port: gateway.app.port)
            // A chunked upload, then a plain GET on the same connection: both answered, in order.
            try await connection.send(
                "POST /v1/photos/x/download HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n3;x=y\r\nabc\r\n0\r\n\r\n"
                    + "GET /v1/media/bytes/4 HTTP/1.1\r\nHost: gateway\r\n\r\n"
            )
            let answers = try await connection.read(2)
            #expect(answers.map(\.status) == [200, 200])
            let echo = try JSONSerialization.jsonObject(with: Data(answers[0].body)) as? [String: Any]
            #expect(echo?["method"] as? String == "POST" && echo?["bodySize"] as? Int == 5)
            #expect(answers[1].body.count == 4)
            // Past the limit in data (not in the chunks' framing): 413 before the service answers,
            // and the connection ends, as the rest of the body cannot be read past.
            let large = try RawHTTPConnection(port: gateway.app.port, timeout: .seconds(10))
            let chunk = String(repeating: "z", count: 40 << 10)
            try await large.send("POST /v1/photos/x/download HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: chunked\r\n\r\n")
            try await large.send("A000\r\n\(chunk)\r\nA000\r\n\(chunk)\r\n")
            let refused = try await large.read(1)
            #expect(refused.first?.status == 413)
            #expect(refused.first?.headers["connection"] == "close")
        }
    }

    @Test func aClientWaitingForContinueGetsItOnceTheCallIsAdmittedAndARefusalIfNot() async throws {
        try await GatewayHarness.with(["GATEWAY_MAX_BODY_EDIT_RENDER": "1KiB"]) { gateway in
            let token = try gateway.token()
            let connection = try RawHTTPConnection(port: gateway.app.port)
            try await connection.send(
                "POST /v1/uploads HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer \(token)\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"
            )
            let interim = try await connection.readInterim()
            #expect(interim == 100)
            try await connection.send("data")
            let answer = try await connection.read(1).first
            #expect(answer?.status == 200)
            let echo = try JSONSerialization.jsonObject(with: Data(answer?.body ?? [])) as? [String: Any]
            #expect(echo?["bodySize"] as? Int == 4)
            // The service never sees the expectation: the gateway answered it.
            #expect((echo?["headers"] as? [String: String])?["expect"] == nil)
            // Without a token: 401 at once, no 100, and the connection ends (the client may still
            // send the body it held back).
            let refused = try RawHTTPConnection(port: gateway.app.port)
            try await refused.send("POST /v1/uploads HTTP/1.1\r\nHost: gateway\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
            let answered = try await refused.read(1).first
            #expect(answered?.status == 401 && answered?.headers["connection"] == "close")
            // Over the limit: 413 at once.
            let tooLarge = try RawHTTPConnection(port: gateway.app.port)
            try await tooLarge.send(
                "POST /v1/uploads HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer \(token)\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"
            )
            #expect(try await tooLarge.read(1).first?.status == 413)
        }
    }

    @Test func aRefusedRequestsSmallBodyIsReadPastAndTheConnectionCarriesOn() async throws {
        try await GatewayHarness.with { gateway in
            let connection = try RawHTTPConnection(port: gateway.app.port)
            // No token for edit-render: 401, its body dropped, and the next request on the same
            // connection answered.
            try await connection.send(
                "POST /v1/edits HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"filter\":1}\n"
                    + "GET /v1/media/bytes/3 HTTP/1.1\r\nHost: gateway\r\n\r\n"
            )
            let answers = try await connection.read(2)
            #expect(answers.map(\.status) == [401, 200])
            #expect(answers[0].headers["www-authenticate"]?.hasPrefix("Bearer") == true && answers[0].headers["connection"] == nil)
            #expect(answers[1].body.count == 3)
        }
    }

    @Test func headAndHTTP10ClientsGetAnswersFramedForThem() async throws {
        let service = try ScriptedUpstream([
            .sends("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n"),
            .sends("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nuntil the end"),
        ])
        defer { service.stop() }
        try await GatewayHarness.with(["GATEWAY_PHOTO_CATALOG_URL": "http://127.0.0.1:\(service.port)"]) { gateway in
            // HEAD: the length a GET would have, and no body (the next answer follows at once).
            let head = try RawHTTPConnection(port: gateway.app.port)
            try await head.send("HEAD /v1/media/bytes/5000 HTTP/1.1\r\nHost: gateway\r\n\r\nGET /v1/media/bytes/2 HTTP/1.1\r\nHost: gateway\r\n\r\n")
            let answers = try await head.read(2, headRequests: [0])
            #expect(answers[0].status == 200 && answers[0].headers["content-length"] == "5000" && answers[0].body.isEmpty, "\(answers[0])")
            #expect(answers[1].body.count == 2)
            // HTTP/1.0 has no chunks: a chunked answer's data, then the connection's end.
            for expected in ["hello world", "until the end"] {
                let old = try RawHTTPConnection(port: gateway.app.port)
                try await old.send("GET /v1/photos/1 HTTP/1.0\r\n\r\n")
                let (head, body) = try await old.readToEnd()
                #expect(head.hasPrefix("HTTP/1.1 200") && !head.lowercased().contains("transfer-encoding"), "\(head)")
                #expect(body == expected)
            }
            // An HTTP/1.0 client that asks to keep its connection keeps it for length-framed answers.
            let kept = try RawHTTPConnection(port: gateway.app.port)
            try await kept.send(
                "GET /v1/media/bytes/3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /v1/media/bytes/4 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
            )
            let keptAnswers = try await kept.read(2)
            #expect(keptAnswers.map(\.body.count) == [3, 4])
            #expect(keptAnswers[0].headers["connection"] == "keep-alive")
        }
    }

    @Test func tricklingAndMalformedRequestsGetProperAnswersAndTheGatewayStaysUp() async throws {
        try await GatewayHarness.with { gateway in
            // A head that arrives a few bytes at a time is read whole before anything is decided.
            let trickle = try RawHTTPConnection(port: gateway.app.port)
            let request = "GET /v1/media/bytes/6 HTTP/1.1\r\nHost: gateway\r\nAccept: */*\r\n\r\n"
            var rest = Substring(request)
            while !rest.isEmpty {
                try await trickle.send(String(rest.prefix(3)))
                rest = rest.dropFirst(3)
                try await Task.sleep(for: .milliseconds(2))
            }
            #expect(try await trickle.read(1).first?.body.count == 6)
            // What is not a request the gateway can read safely gets a 400 problem at once, and the
            // connection closes (never left hanging unanswered).
            for malformed in [
                "GET /v1/media/bytes/1 HTTP/1.1\r\nHost: gateway\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "GET /v1/media/bytes/1 HTTP/1.1\r\nHost : gateway\r\n\r\n",
                "\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}\r\n\r\n",
            ] {
                let connection = try RawHTTPConnection(port: gateway.app.port, timeout: .seconds(5))
                try await connection.send(malformed)
                let answer = try await connection.read(1).first
                #expect(answer?.status == 400, "\(malformed.debugDescription)")
                #expect(answer.map { String(decoding: $0.body, as: UTF8.self) }?.contains("urn:splash:problem:malformed-request") == true)
            }
            #expect(try await gateway.get("/v1/media/bytes/7").body.count == 7)
            // A long URL (a data API filter of thousands of values) goes through; a head past what
            // the services' parser takes is a 431.
            let query = (0..<5_000).map { "x\($0)" }.joined(separator: "%2C")
            let long = try await gateway.get("/v1/photos?in=\(query)")
            #expect(long.status == 200)
            #expect((try long.json()["uri"] as? String)?.count == "/v1/photos?in=".count + query.count)
            let overlong = try RawHTTPConnection(port: gateway.app.port, timeout: .seconds(5))
            try await overlong.send("GET /v1/photos?q=\(String(repeating: "a", count: MessageHead.maximumSize)) HTTP/1.1\r\nHost: gateway\r\n\r\n")
            #expect(try await overlong.read(1).first?.status == 431)
        }
    }

    @Test func aServiceThisGatewayHasNoURLForAnswers503() async throws {
        try await GatewayHarness.with { gateway in
            let response = try await gateway.get("/v1/likes", bearer: try gateway.token())
            #expect(response.status == 503)
            #expect(try response.json()["type"] as? String == "urn:splash:problem:upstream-not-configured")
        }
    }

    @Test func browsersFromAllowedOriginsGetCORSHeadersAndOthersDoNot() async throws {
        try await GatewayHarness.with(["GATEWAY_CORS_ORIGINS": "https://app.example.com"]) { gateway in
            let preflight = try await gateway.app.request(
                .options,
                "/v1/edits",
                headers: [
                    ("Origin", "https://app.example.com"), ("Access-Control-Request-Method", "POST"),
                    ("Access-Control-Request-Headers", "authorization, content-type"),
                ]
            )
            #expect(preflight.status == 204)
            #expect(preflight.headers["access-control-allow-origin"] == "https://app.example.com")
            #expect(preflight.headers["access-control-allow-headers"] == "authorization, content-type")
            let refused = try await gateway.app.request(
                .options,
                "/v1/edits",
                headers: [("Origin", "https://evil.example"), ("Access-Control-Request-Method", "POST")]
            )
            #expect(refused.status == 403)
            #expect(refused.headers["access-control-allow-origin"] == nil)
            let simple = try await gateway.get("/v1/photos", headers: [("Origin", "https://app.example.com")])
            #expect(simple.headers["access-control-allow-origin"] == "https://app.example.com")
            #expect(simple.headers["access-control-expose-headers"]?.contains("RateLimit-Remaining") == true)
            #expect(simple.headers["vary"]?.contains("Origin") == true)
            // A refusal too: the app's code must be able to read the 401 that tells it to refresh.
            let refusal = try await gateway.get("/v1/edits", headers: [("Origin", "https://app.example.com")])
            #expect(refusal.status == 401 && refusal.headers["access-control-allow-origin"] == "https://app.example.com")
            let other = try await gateway.get("/v1/photos", headers: [("Origin", "https://evil.example")])
            #expect(other.status == 200 && other.headers["access-control-allow-origin"] == nil && other.headers["vary"]?.contains("Origin") == true)
        }
    }
}
