import HTTPEdge
import NIOCore
import Testing

/// The proxy's own reading of HTTP/1.1: the heads it takes, the requests it reads from them, the
/// ones it refuses, and where answers end.
@Suite("Gateway message heads") struct MessageHeadTests {
    private func take(_ text: String) -> (MessageHead.Parse, rest: String) {
        var buffer = ByteBuffer(string: text)
        let parse = MessageHead.take(from: &buffer)
        return (parse, String(buffer: buffer))
    }

    private func head(_ text: String) throws -> MessageHead {
        guard case .head(let head) = take(text).0 else { throw HeadTestError.notAHead(text) }
        return head
    }

    private enum HeadTestError: Error {
        case notAHead(String)
    }

    @Test func aRequestHeadIsTakenWholeWithItsFieldsAndTheBytesAfterItStay() throws {
        let text =
            "GET /v1/photos?page=2 HTTP/1.1\r\nHost: gateway\r\nauthorization:  Bearer abc \t\r\nX-Forwarded-For: 1.2.3.4\r\nx-forwarded-for: 5.6.7.8\r\n\r\nGET /next"
        guard case .head(let head) = take(text).0 else {
            Issue.record("not taken")
            return
        }
        #expect(take(text).rest == "GET /next")
        #expect(head.fields.map(\.kind) == [.host, .authorization, .xForwardedFor, .xForwardedFor])
        #expect(head.combined(.authorization) == "Bearer abc")
        #expect(head.combined(.xForwardedFor) == "1.2.3.4, 5.6.7.8")
        let request = try #require(ClientRequest(head))
        #expect(
            request.method == .get && request.target == "/v1/photos?page=2" && request.path == "/v1/photos" && request.body == .none
                && !request.closes
        )
    }

    @Test func aHeadStillComingIsIncompleteAndAnOverlongOneIsTooLarge() {
        guard case .incomplete = take("GET / HTTP/1.1\r\nHost: a\r\n").0 else {
            Issue.record("not incomplete")
            return
        }
        guard case .incomplete = take("GET / HTTP/1.1\r\nHost: a\r\n\r").0 else {
            Issue.record("not incomplete")
            return
        }
        let long = "GET / HTTP/1.1\r\nX-Long: " + String(repeating: "a", count: MessageHead.maximumSize)
        guard case .tooLarge = take(long).0 else {
            Issue.record("an overlong head was not refused")
            return
        }
        let whole = "GET / HTTP/1.1\r\nX-Long: " + String(repeating: "a", count: MessageHead.maximumSize) + "\r\n\r\n"
        guard case .tooLarge = take(whole).0 else {
            Issue.record("an overlong head was taken")
            return
        }
    }

    @Test(arguments: [
        "GET / HTTP/1.1\nHost: a\r\n\r\n",  // a bare LF ends the start line
        "GET / HTTP/1.1\r\nHost: a\n\r\n\r\n",  // a bare LF inside a field
        "GET / HTTP/1.1\r\nHost : a\r\n\r\n",  // space before the colon
        "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",  // obsolete line folding
        "GET / HTTP/1.1\r\nX-A: a\u{01}b\r\n\r\n",  // a control character in a value
        "GET / HTTP/1.1\r\n: empty name\r\n\r\n",
        "GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n",  // a bare CR
    ])
    func headsOutsideTheStrictGrammarAreNotTaken(text: String) {
        guard case .notPlain = take(text).0 else {
            Issue.record("taken: \(text.debugDescription)")
            return
        }
    }

    @Test(arguments: [
        "GET /v1/edits HTTP/2.0\r\n\r\n",
        "GET /v1/edits HTTP/1.1 \r\n\r\n",
        "GET v1/edits HTTP/1.1\r\n\r\n",
        "GET ftp://elsewhere/ HTTP/1.1\r\n\r\n",
        "GET  / HTTP/1.1\r\n\r\n",
        "G(T / HTTP/1.1\r\n\r\n",
        "POST /v1/edits HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "POST /v1/edits HTTP/1.1\r\nContent-Length: 5x\r\n\r\n",
        // What a front server and the service could read as two different requests.
        "POST /v1/edits HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        "POST /v1/edits HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
    ])
    func requestsTheGatewayCannotReadSafelyAreRefused(text: String) throws {
        #expect(ClientRequest(try head(text)) == nil)
    }

    @Test func listsAreReadElementByElementInAnyCaseSkippingEmptyOnes() throws {
        let head = try head(
            "GET / HTTP/1.1\r\nConnection: , keep-alive ,,\tX-Hop\r\nTransfer-Encoding: gzip, \r\nconnection: CLOSE\r\nTransfer-Encoding: Chunked ,\r\n\r\n"
        )
        var elements: [String] = []
        head.forEachListElement(of: .connection) { elements.append(String(decoding: $0, as: UTF8.self)) }
        #expect(elements == ["keep-alive", "X-Hop", "CLOSE"])
        #expect(head.lists(.connection, "close") && head.lists(.connection, "x-hop") && !head.lists(.connection, "upgrade"))
        #expect(head.listEnds(.transferEncoding, with: "chunked") && !head.listEnds(.transferEncoding, with: "gzip"))
        #expect(!head.lists(.expect, "100-continue") && !head.listEnds(.expect, with: "100-continue"))
        // Only a whole element counts.
        #expect(!(try self.head("GET / HTTP/1.1\r\nConnection: closed\r\n\r\n")).lists(.connection, "close"))
    }

    @Test func fieldsNamedByConnectionAndHopByHopOnesAreNotForwarded() throws {
        let head = try head(
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, x-private\r\nX-PRIVATE: 1\r\nKeep-Alive: timeout=5\r\nX-Kept: 2\r\nX-Request-Id: r\r\n\r\n"
        )
        var buffer = ByteBuffer()
        head.writeEndToEndFields(to: &buffer, dropping: [.xRequestID])
        #expect(String(buffer: buffer) == "X-Kept: 2\r\n")
    }

    @Test func howARequestEndsAndWhatFollowsItAreRead() throws {
        let post = try #require(ClientRequest(try head("POST /v1/edits HTTP/1.1\r\ncontent-length: 42\r\n\r\n")))
        #expect(post.method == .post && post.body == .length(42) && !post.closes && !post.isRetryable)
        let chunked = try #require(ClientRequest(try head("PUT /v1/edits/1 HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n")))
        #expect(chunked.body == .chunked && !chunked.isRetryable)
        let last = try #require(ClientRequest(try head("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n")))
        #expect(last.closes && last.head.lists(.connection, "keep-alive") && last.isRetryable)
        let waiting = try #require(ClientRequest(try head("POST /v1/uploads HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n")))
        #expect(waiting.expectsContinue)
        let upgrade = try #require(ClientRequest(try head("GET /v1/realtime HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")))
        #expect(upgrade.upgrades)
        // HTTP/1.0 keeps its connection only when it asks to.
        let old = try #require(ClientRequest(try head("GET /v1/photos HTTP/1.0\r\n\r\n")))
        #expect(old.isHTTP10 && old.closes)
        #expect(try #require(ClientRequest(try head("GET /v1/photos HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))).closes == false)
    }

    @Test(arguments: [
        ("GET http://gateway.example/v1/photos?page=2 HTTP/1.1\r\n\r\n", "/v1/photos?page=2", "/v1/photos"),
        ("GET HTTPS://gateway.example HTTP/1.1\r\n\r\n", "/", "/"),
        ("GET http://gateway.example?x=1 HTTP/1.1\r\n\r\n", "/?x=1", "/"),
        ("OPTIONS * HTTP/1.1\r\n\r\n", "*", "*"),
    ])
    func anAbsoluteTargetIsReadAsItsPath(text: String, target: String, path: String) throws {
        let request = try #require(ClientRequest(try head(text)))
        #expect(request.target == target && request.path == path)
    }

    @Test func fieldNamesAreToldApartInAnyCase() {
        for (name, kind) in [
            ("X-REQUEST-ID", FieldKind.xRequestID), ("content-LENGTH", .contentLength), ("TE", .te), ("ApiKey", .apiKey), ("X-Request-Ids", .other),
            ("Hosts", .other), ("Proxy-Authorization-Extra", .other), ("", .other),
        ] {
            #expect(Array(name.utf8).withUnsafeBytes { FieldKind($0) } == kind, "\(name)")
        }
    }

    // MARK: Answers

    /// Feeds `text` to a reader `split` bytes at a time; the head, the body passed on, and whether it ended.
    private func read(_ text: String, split: Int = .max) throws -> (head: AnswerReader.Head?, body: String, ended: Bool) {
        var reader = AnswerReader()
        var head: AnswerReader.Head?
        var body = ""
        var ended = false
        var bytes = ByteBuffer(string: text)
        while bytes.readableBytes > 0, !ended {
            reader.receive(bytes.readSlice(length: min(split, bytes.readableBytes))!)
            while !ended, let step = try reader.next() {
                switch step {
                case .needMore: break
                case .head(let found):
                    head = found
                    ended = found.endsWithHead
                case .body(let chunk, let ends):
                    body += String(buffer: chunk)
                    ended = ends
                }
                if case .needMore = step { break }
            }
        }
        return (head, body, ended)
    }

    @Test(arguments: [1, 3, 7, 1_000]) func answersEndWhereTheirFramingSaysWhateverTheReads(split: Int) throws {
        let sized = try read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA", split: split)
        #expect(sized.head?.status == 200 && sized.head?.body == .length(5) && sized.body == "hello" && sized.ended)

        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n"
        let chunks = try read(chunked + "NEXT", split: split)
        #expect(chunks.head?.body == .chunked && chunks.ended)
        #expect(chunks.body == String(chunked[chunked.range(of: "\r\n\r\n")!.upperBound...]))

        let untilClose = try read("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it", split: split)
        #expect(untilClose.head?.body == .untilClose && untilClose.head?.keepAlive == false && untilClose.body == "all of it" && !untilClose.ended)

        let interim = try read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n", split: split)
        #expect(interim.head?.status == 204 && interim.head?.body == AnswerReader.Body.none && interim.ended)
    }

    @Test func anAnswerToHEADHasNoBodyWhateverItsHeadDeclares() throws {
        var reader = AnswerReader(toHEAD: true)
        reader.receive(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\nHTTP/1.1 200 OK"))
        guard case .head(let head)? = try reader.next() else {
            Issue.record("no head")
            return
        }
        #expect(head.body == AnswerReader.Body.none && head.declared == .length(1234) && head.endsWithHead && head.keepAlive)
    }

    @Test(arguments: [1, 4, 1_000]) func aChunkedBodysDataIsCountedAndFoundWhateverTheReads(split: Int) throws {
        let body = "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n"
        var scanner = ChunkedBodyScanner()
        var data = ""
        var counted = 0
        var ended = false
        var bytes = ByteBuffer(string: body + "NEXT")
        while !ended {
            let piece = bytes.readSlice(length: min(split, bytes.readableBytes))!
            let scan = try scanner.scan(piece) { range in
                data += String(buffer: piece.getSlice(at: piece.readerIndex + range.lowerBound, length: range.count)!)
            }
            counted += scan.data
            ended = scan.ends
            if ended { #expect(scan.count <= piece.readableBytes) }
        }
        #expect(data == "hello0123456789" && counted == 15)
    }

    @Test func whetherAConnectionCanBeUsedAgainFollowsTheAnswer() throws {
        #expect(try read("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").head?.keepAlive == true)
        #expect(try read("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").head?.keepAlive == false)
        #expect(try read("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").head?.keepAlive == false)
        // Both framings at once is a sign of smuggling: the connection is not trusted again.
        #expect(try read("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").head?.keepAlive == false)
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: five\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n",
        "SSH-2.0-OpenSSH\r\n\r\n",
    ])
    func malformedAnswersAreRefused(text: String) {
        #expect(throws: AnswerReader.Failure.self) { try read(text) }
    }
}
