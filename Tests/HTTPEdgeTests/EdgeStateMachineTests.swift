import Foundation
import HTTPEdge
import NIOCore
import Testing

/// The gateway's edge, event by event, without a socket: what a client connection's state machine
/// asks its handler to do as requests, answers, failures and a slow or vanishing client come.
@Suite("The edge's state machine")
struct EdgeStateMachineTests {
    @Test func aProxiedCallIsAdmittedSentAndAnsweredAndItsConnectionParked() {
        var edge = EdgeDriver()
        #expect(edge.read("GET /api/a HTTP/1.1\r\nHost: a\r\n\r\n") == ["admit /api/a"])
        #expect(edge.admit() == ["connect"])
        #expect(edge.connect() == ["send head, flush"])
        #expect(
            edge.answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                == ["head 200, length 5, then hello", "completed 200, park upstream"]
        )
    }

    // MARK: Pipelining

    @Test func pipelinedRequestsAreAnsweredInOrderWhetherProxiedOrTheRoutersOwn() {
        var edge = EdgeDriver()
        // A routed request, a proxied one and a routed one, in one read.
        #expect(
            edge.read("GET /own HTTP/1.1\r\n\r\nGET /api/a HTTP/1.1\r\n\r\nGET /own/2 HTTP/1.1\r\n\r\n")
                == ["passed on true", "router GET /own HTTP/1.1⏎⏎"]
        )
        #expect(edge.event { $0.clientReadComplete() } == ["router read complete"])
        // The proxied call waits for the router's answer, and nothing more is read meanwhile.
        #expect(edge.event { $0.readRequested() } == [])
        #expect(edge.event { $0.routedAnswerEnded() } == ["schedule resume"])
        #expect(edge.event { $0.resume() } == ["admit /api/a"])
        // What follows the proxied call goes on to the router once its answer is out.
        #expect(
            edge.serve("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") == [
                "connect", "send head, flush",
                "head 200, length 2, then ok", "completed 200, park upstream",
                "router GET /own/2 HTTP/1.1⏎⏎", "read", "router read complete",
            ]
        )
    }

    @Test func aSecondProxiedCallWaitsForTheFirstsAnswer() {
        var edge = EdgeDriver()
        #expect(edge.read("GET /api/1 HTTP/1.1\r\n\r\nGET /api/2 HTTP/1.1\r\n\r\n") == ["admit /api/1"])
        #expect(edge.admit() + edge.connect() == ["connect", "send head, flush"])
        #expect(
            edge.answer("HTTP/1.1 204 No Content\r\n\r\n") == [
                "head 204, no length", "completed 204, park upstream", "admit /api/2",
            ]
        )
        #expect(edge.calls.map(\.path) == ["/api/1", "/api/2"])
    }

    // MARK: Upgrades

    @Test func anUpgradeTheHandlerServesTakesTheConnectionWithWhatCameAfterItsHead() {
        var edge = EdgeDriver()
        let upgrade = "GET /live?x=1 HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
        // The router never sees the connection, and the first frame's bytes go with it.
        #expect(edge.read(upgrade + "frame") == ["passed on false", "hand over /live, then frame"])
        #expect(edge.read("more") == [])
    }

    @Test func anUpgradeAfterAProxiedCallOnTheSameConnectionIsHandedOver() {
        var edge = EdgeDriver()
        #expect(edge.read("GET /api/a HTTP/1.1\r\n\r\n") == ["admit /api/a"])
        #expect(
            edge.serve("HTTP/1.1 204 No Content\r\n\r\n") == ["connect", "send head, flush", "head 204, no length", "completed 204, park upstream"]
        )
        #expect(
            edge.read("GET /live HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n")
                == ["passed on false", "hand over /live"]
        )
    }

    @Test func otherUpgradesAndOnesBehindARoutedAnswerGoToTheRouter() {
        var edge = EdgeDriver()
        // Not the handler's path: the router has the rest of the connection.
        #expect(
            edge.read("GET /own HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\nbytes")
                == ["passed on true", "router GET /own HTTP/1.1⏎Connection: Upgrade⏎Upgrade: h2c⏎⏎", "router bytes"]
        )
        // Behind a routed request whose answer has not ended, the handler's path too: the
        // connection is the router's already.
        var behind = EdgeDriver()
        #expect(
            behind.read("GET /own HTTP/1.1\r\n\r\nGET /live HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
                == ["passed on true", "router GET /own HTTP/1.1⏎⏎", "router GET /live HTTP/1.1⏎Connection: Upgrade⏎Upgrade: websocket⏎⏎"]
        )
        // A plain GET of the handler's path is the router's to answer (426 at the gateway).
        var plain = EdgeDriver()
        #expect(plain.read("GET /live HTTP/1.1\r\n\r\n") == ["passed on true", "router GET /live HTTP/1.1⏎⏎"])
    }

    // MARK: Expect: 100-continue

    @Test func aClientWaitingForContinueGetsItOnceItsCallIsAdmitted() {
        var edge = EdgeDriver()
        #expect(edge.read("POST /api/up HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n") == ["admit /api/up"])
        #expect(edge.admit() == ["100 continue", "connect"])
        #expect(edge.connect() == ["send head", "flush upstream"])
        #expect(edge.read("hello") == ["send hello", "flush upstream"])
        #expect(edge.answer("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n") == ["head 201, length 0", "completed 201, park upstream"])
    }

    @Test func aRefusedClientWaitingForContinueIsAnsweredAndTheConnectionEnds() {
        var edge = EdgeDriver()
        #expect(edge.read("POST /api/up HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n") == ["admit /api/up"])
        // It holds its body back, so nothing after it can be read as a request.
        #expect(edge.refuse(401) == ["answer 401 refusal, close", "close output, linger"])
        #expect(edge.read("hello") == [])
    }

    // MARK: Refused bodies

    @Test func aRefusedRequestsBodyIsReadPastAndTheNextRequestServed() {
        var edge = EdgeDriver()
        #expect(edge.read("POST /api/x HTTP/1.1\r\nContent-Length: 10\r\n\r\n01234") == ["admit /api/x"])
        #expect(edge.refuse(401) == ["answer 401 refusal"])
        #expect(edge.read("56789GET /own HTTP/1.1\r\n\r\n") == ["passed on true", "router GET /own HTTP/1.1⏎⏎"])
    }

    @Test(arguments: [
        "POST /api/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        "POST /api/x HTTP/1.1\r\nContent-Length: 1000\r\n\r\n",
    ])
    func aRefusedBodyThatCannotBeReadPastEndsTheConnection(request: String) {
        var limits = EdgeLimits()
        limits.discardLimit = 100
        var edge = EdgeDriver(limits: limits)
        #expect(edge.read(request) == ["admit /api/x"])
        #expect(edge.refuse(429) == ["answer 429 refusal, close", "close output, linger"])
    }

    @Test func aDeclaredBodyOverTheRoutesLimitIs413WithoutAnyCheck() {
        var edge = EdgeDriver(maxBodySize: 4)
        #expect(edge.read("PUT /api/x HTTP/1.1\r\nContent-Length: 10\r\n\r\n") == ["answer 413 over 4"])
        #expect(edge.read("0123456789GET /own HTTP/1.1\r\n\r\n") == ["passed on true", "router GET /own HTTP/1.1⏎⏎"])
    }

    @Test func aChunkedUploadIsStreamedAndCutOffPastTheLimit() {
        var edge = EdgeDriver(maxBodySize: 8)
        #expect(edge.read("POST /api/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == ["admit /api/up"])
        #expect(edge.admit() + edge.connect() == ["connect", "send head", "flush upstream"])
        #expect(edge.read("5\r\nhello\r\n") == ["send 5⏎hello⏎", "flush upstream"])
        #expect(edge.read("5\r\nworld\r\n") == ["close upstream", "answer 413 over 8, close", "close output, linger"])
    }

    @Test func aChunkedUploadBreakingItsFramingIs400() {
        var edge = EdgeDriver()
        _ = edge.read("POST /api/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        _ = edge.admit() + edge.connect()
        #expect(edge.read("zz\r\n") == ["close upstream", "answer 400 malformed body, close", "close output, linger"])
    }

    // MARK: Framing for the client

    @Test func anHTTP10ClientGetsAChunkedAnswerUnchunkedToTheConnectionsEnd() {
        var edge = EdgeDriver()
        #expect(edge.read("GET /api/a HTTP/1.0\r\n\r\n") == ["admit /api/a"])
        #expect(
            edge.serve("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n") == [
                "connect", "send head, flush",
                "head 200, no length, close", "write hello", "completed 200, park upstream", "close",
            ]
        )
    }

    @Test func anHTTP10ClientAskingForKeepAliveKeepsItsConnection() {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(
            edge.serve("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").suffix(2)
                == ["head 200, length 2, keep-alive, then ok", "completed 200, park upstream"]
        )
        #expect(edge.read("GET /api/b HTTP/1.0\r\n\r\n") == ["admit /api/b"])
    }

    @Test func anAnswerRunningToTheServicesCloseReachesAnHTTP11ClientInChunks() {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/a HTTP/1.1\r\n\r\n")
        #expect(edge.serve("HTTP/1.1 200 OK\r\n\r\nabc").suffix(2) == ["head 200, chunked", "write 3⏎abc⏎"])
        #expect(edge.event { $0.upstreamReadComplete() } == ["flush"])
        #expect(edge.event { $0.upstreamClosed(nil) } == ["close upstream", "write 0⏎⏎", "flush", "finished 200"])
        #expect(edge.read("GET /api/b HTTP/1.1\r\n\r\n") == ["admit /api/b"])
    }

    @Test func anAnswerToHEADHasTheDeclaredLengthAndNoBody() {
        var edge = EdgeDriver()
        _ = edge.read("HEAD /api/a HTTP/1.1\r\n\r\n")
        #expect(
            edge.serve("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n").suffix(2)
                == ["head 200, length 100", "completed 200, park upstream"]
        )
    }

    // MARK: The service failing

    @Test func aServiceThatCannotBeReachedIsTriedTwiceThen503() {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/a HTTP/1.1\r\n\r\n")
        _ = edge.admit()
        let refused = IOError(errnoCode: ECONNREFUSED, reason: "connect")
        #expect(edge.event { $0.connectFailed(refused, retryable: true) } == ["connect anew"])
        #expect(edge.event { $0.connectFailed(refused, retryable: true) } == ["answer 503"])
        #expect(edge.read("GET /api/b HTTP/1.1\r\n\r\n") == ["admit /api/b"])
    }

    @Test func aPoolWithEveryConnectionInUseSheds503AtOnce() {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/a HTTP/1.1\r\n\r\n")
        _ = edge.admit()
        #expect(edge.event { $0.connectFailed(UpstreamPoolError.busy, retryable: false) } == ["answer 503"])
    }

    @Test func noAnswerBegunByTheDeadlineIs504() {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/a HTTP/1.1\r\n\r\n")
        _ = edge.admit() + edge.connect()
        let admittedAt = edge.now
        // The connection's one timer fired for an earlier call: it is set again.
        #expect(edge.event { $0.deadlinePassed(now: admittedAt + .seconds(29)) } == ["arm deadline"])
        #expect(edge.event { $0.deadlinePassed(now: admittedAt + .seconds(31)) } == ["close upstream", "answer 504"])
        // The late answer of the service finds no call.
        #expect(edge.answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") == [])
    }

    @Test(arguments: [
        ("", "answer 502"),
        ("HTTP/2 200\r\n\r\n", "answer 502"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel", "answer 502"),
    ])
    func aServiceThatBreaksOffBeforeTheAnswersHeadLeftIs502(sent: String, answer: String) {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/a HTTP/1.1\r\n\r\n")
        _ = edge.admit() + edge.connect()
        let malformed = sent.hasPrefix("HTTP/2")
        let read = edge.answer(sent)
        let closed = malformed ? [] : edge.event { $0.upstreamClosed(nil) }
        #expect(read + closed == ["close upstream", answer])
    }

    @Test func aServiceThatBreaksOffAfterTheAnswersHeadLeftCutsTheConnection() {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/big HTTP/1.1\r\n\r\n")
        _ = edge.admit() + edge.connect()
        #expect(edge.answer("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc") == ["head 200, length 100000", "write abc"])
        #expect(edge.event { $0.upstreamClosed(nil) } == ["close upstream", "flush", "finished 200", "close"])
    }

    @Test func aReusedConnectionClosedBeforeAnsweringIsReplacedForARepeatableCall() {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/a HTTP/1.1\r\n\r\n")
        _ = edge.admit()
        #expect(edge.connect(reused: true) == ["send head, flush"])
        #expect(edge.event { $0.upstreamClosed(nil) } == ["close upstream", "connect anew"])
        #expect(edge.connect() == ["send head, flush"])
        #expect(edge.answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").last == "completed 200, park upstream")
    }

    @Test func aReusedConnectionClosedUnderACallWithABodyIs502() {
        var edge = EdgeDriver()
        _ = edge.read("POST /api/a HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi")
        _ = edge.admit()
        #expect(edge.connect(reused: true) == ["send head", "send hi", "flush upstream"])
        #expect(edge.event { $0.upstreamClosed(nil) } == ["close upstream", "answer 502"])
    }

    // MARK: The client

    @Test func aClientClosingMidBodyCutsTheServicesConnectionAndNothingLateActs() {
        var edge = EdgeDriver()
        _ = edge.read("POST /api/up HTTP/1.1\r\nContent-Length: 100\r\n\r\n")
        _ = edge.admit()
        #expect(edge.connect() == ["send head", "flush upstream"])
        #expect(edge.read("0123456789") == ["send 0123456789", "flush upstream"])
        #expect(edge.event { $0.clientClosed() } == ["passed on false", "close upstream", "cancel deadline"])
        #expect(edge.answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") == [])
        #expect(edge.read("more") == [])
        #expect(!edge.machine.isCurrent(edge.calls[0]))
    }

    @Test func aSlowClientPausesTheServiceUntilItTakesTheAnswer() {
        var edge = EdgeDriver()
        _ = edge.read("GET /api/big HTTP/1.1\r\n\r\n")
        _ = edge.admit() + edge.connect()
        _ = edge.answer("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc")
        #expect(edge.event { $0.clientWritabilityChanged(isWritable: false) } == ["upstream reading off", "flush"])
        #expect(edge.answer("def") == ["write def"])
        #expect(edge.event { $0.clientWritabilityChanged(isWritable: true) } == ["upstream reading on"])
    }

    @Test func aFullServiceSocketHoldsTheBodyAndTheClientsReadsBack() {
        var edge = EdgeDriver()
        _ = edge.read("POST /api/up HTTP/1.1\r\nContent-Length: 20\r\n\r\n")
        _ = edge.admit() + edge.connect()
        #expect(edge.event { $0.upstreamWritabilityChanged(isWritable: false) } == [])
        #expect(edge.read("0123456789") == ["flush upstream"])
        #expect(edge.event { $0.readRequested() } == [])
        #expect(edge.event { $0.upstreamWritabilityChanged(isWritable: true) } == ["send 0123456789", "flush upstream", "read"])
    }

    // MARK: Bytes that are no request

    @Test(arguments: [
        // Two readings of where the body ends: how requests are smuggled.
        "POST /api/a HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /api/a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        "POST /api/a HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "POST /api/a HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "POST /api/a HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
        "POST /api/a HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
        "POST /api/a HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
        // Outside the grammar: folded lines, bare line feeds, another version.
        "GET /api/a HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",
        "GET /api/a HTTP/1.1\nHost: a\r\n\r\n",
        "GET /api/a HTTP/2.0\r\n\r\n",
        "GET  /api/a HTTP/1.1\r\n\r\n",
    ])
    func anAmbiguousOrMalformedHeadIs400AndEndsTheConnection(request: String) {
        var edge = EdgeDriver()
        #expect(edge.read(request + "GET /api/next HTTP/1.1\r\n\r\n") == ["answer 400, close", "close"])
        #expect(edge.calls.isEmpty)
    }

    @Test func aHeadPastTheLimitIs431() {
        var edge = EdgeDriver()
        let long = "GET /api/a HTTP/1.1\r\nX-Long: " + String(repeating: "a", count: MessageHead.maximumSize) + "\r\n\r\n"
        #expect(edge.read(long) == ["answer 431, close", "close"])
    }

    @Test func aMalformedHeadBehindARoutedRequestIsLeftToTheRoutersParser() {
        var edge = EdgeDriver()
        #expect(
            edge.read("GET /own HTTP/1.1\r\n\r\nGET /api/a HTTP/1.1\nbad\r\n\r\n")
                == ["passed on true", "router GET /own HTTP/1.1⏎⏎", "router GET /api/a HTTP/1.1\nbad⏎⏎"]
        )
        #expect(edge.event { $0.routerRefusedRequest() } == ["close"])
    }

    // MARK: Shutdown and preflights

    @Test func aGracefulShutdownClosesAnIdleConnectionAndTheNextAnswerEndsABusyOne() {
        var idle = EdgeDriver()
        #expect(idle.event { $0.quiesce() } == ["close"])

        var busy = EdgeDriver()
        _ = busy.read("GET /api/a HTTP/1.1\r\n\r\n")
        _ = busy.admit() + busy.connect()
        #expect(busy.event { $0.quiesce() } == [])
        #expect(
            busy.answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                == ["head 200, length 2, close, then ok", "completed 200, park upstream", "close"]
        )

        var routed = EdgeDriver()
        _ = routed.read("GET /own HTTP/1.1\r\n\r\n")
        #expect(routed.event { $0.quiesce() } == ["quiesce router"])
    }

    @Test func aPreflightIsAnsweredWithoutTheService() {
        var edge = EdgeDriver()
        _ = edge.read("OPTIONS /api/a HTTP/1.1\r\nOrigin: https://a.example\r\nAccess-Control-Request-Method: PUT\r\n\r\n")
        #expect(edge.event { $0.answeredPreflight([:]) } == ["answer 204 preflight"])
    }
}
