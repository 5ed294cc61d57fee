import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ResourceAPI
import ServiceKit
import Testing

@Suite("Entity tags")
struct EntityTagTests {
    @Test func ifNoneMatchUsesWeakComparison() {
        #expect(EntityTag.matches("\"abc\"", "\"abc\""))
        #expect(EntityTag.matches("W/\"abc\", \"x\"", "\"abc\""))
        #expect(EntityTag.matches("*", "\"abc\""))
        #expect(!EntityTag.matches("\"abcd\"", "\"abc\""))
        #expect(!EntityTag.matches(nil, "\"abc\""))
    }

    @Test func aTagDependsOnTheBytesOnly() {
        let tag = EntityTag.of(Array("{\"a\":1}".utf8))
        #expect(tag == EntityTag.of(Array("{\"a\":1}".utf8)))
        #expect(tag != EntityTag.of(Array("{\"a\":2}".utf8)))
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && tag.count == 24)
    }
}

@Suite("Keyset pages")
struct PageTests {
    @Test func aCursorRoundTripsToTheMicrosecondWithAnyKey() throws {
        let time = Date(timeIntervalSince1970: 1_795_000_000.123456)
        for key in ["6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f", "unsplash:mate-aqua-01", "a|b|c", "ünïcode"] {
            let cursor = PageCursor(time: time, key: key)
            let read = try #require(PageCursor(cursor.description))
            #expect(read.key == key)
            #expect(read.microseconds == cursor.microseconds)
            #expect(!cursor.description.contains("="), "base64url without padding")
        }
        #expect(PageCursor(time: time, id: UUID(uuidString: "6F1C2D3E-4A5B-4C6D-8E7F-9A0B1C2D3E4F")!).key == "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f")
    }

    @Test(arguments: ["", "%%%", "bm90IGEgY3Vyc29y", "eHx5"])
    func textThatIsNoCursorIsRefused(text: String) {
        #expect(PageCursor(text) == nil)
    }

    @Test func aPageKnowsWhetherMoreFollow() {
        let request = PageRequest(limit: 2)
        let (items, next) = request.page(of: [1, 2, 3]) { PageCursor(time: Date(timeIntervalSince1970: Double($0)), key: "\($0)") }
        #expect(Array(items) == [1, 2])
        #expect(next?.key == "2")
        let (last, none) = request.page(of: [1, 2]) { PageCursor(time: Date(timeIntervalSince1970: Double($0)), key: "\($0)") }
        #expect(Array(last) == [1, 2])
        #expect(none == nil)
    }

    @Test func theLastPageSaysSoWithANull() throws {
        let body = String(buffer: try JSONBody.encode(Page(items: [1], nextCursor: nil)))
        #expect(body == #"{"items":[1],"nextCursor":null}"#)
    }

    @Test func badLimitsAndCursorsAre422NamingTheParameter() throws {
        func page(_ query: String) throws -> PageRequest {
            try PageRequest(
                Request(head: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/list?\(query)"), body: RequestBody(buffer: ByteBuffer()))
            )
        }
        #expect(try page("") == PageRequest(limit: 20))
        let cursor = PageCursor(time: Date(timeIntervalSince1970: 1_795_000_000), key: "k")
        #expect(try page("limit=100&cursor=\(cursor)") == PageRequest(limit: 100, cursor: cursor))
        for (query, parameter) in [("limit=0", "limit"), ("limit=101", "limit"), ("limit=ten", "limit"), ("cursor=nope!", "cursor")] {
            do {
                _ = try page(query)
                Issue.record("\(query) was accepted")
            } catch let problem as Problem {
                #expect(problem.status == .unprocessableContent)
                #expect(problem.errors.map(\.detail).contains { $0.hasPrefix(parameter) }, "\(query)")
            }
        }
    }
}

@Suite("Idempotency keys")
struct IdempotencyKeyTests {
    @Test func theSameBodyHashesAlikeAndAnotherDoesNot() {
        let key = IdempotencyKey(key: "k", body: Array("{\"a\":1}".utf8))
        #expect(key == IdempotencyKey(key: "k", body: Array("{\"a\":1}".utf8)))
        #expect(key.requestHash != IdempotencyKey(key: "k", body: Array("{\"a\":2}".utf8)).requestHash)
        #expect(key.requestHash.count == 64)
    }

    @Test func aReplayIsMarkedAndAReusedKeyIsRefused() throws {
        let created = try IdempotencyKey.response(IdempotencyKey.Outcome<Int>.created(1)) { _ in Response(status: .created) }
        #expect(created.status == .created && created.headers[.idempotentReplayed] == nil)
        let replayed = try IdempotencyKey.response(IdempotencyKey.Outcome<Int>.replayed(1)) { _ in Response(status: .created) }
        #expect(replayed.status == .created && replayed.headers[.idempotentReplayed] == "true")
        #expect(throws: Problem.self) { try IdempotencyKey.response(IdempotencyKey.Outcome<Int>.keyReused) { _ in Response(status: .created) } }
    }
}

@Suite("JSON object bodies")
struct JSONObjectTests {
    @Test func eachBadFieldIsNamedAndGoodOnesAreRead() throws {
        var body = try JSONObject(Array(#"{"name":"Soup","count":3,"lat":60.17,"whole":2.0,"big":101,"frac":1.5,"nan":"x","flag":"yes"}"#.utf8))
        #expect(body.text("name", required: true, maxCharacters: 10) == "Soup")
        #expect(body.integer("count", required: true, in: 1...100) == 3)
        #expect(body.integer("whole", required: true, in: 1...100) == 2)
        #expect(body.number("lat", required: true, in: -90...90) == 60.17)
        #expect(body.number("count", required: true, in: 0...10) == 3)
        #expect(body.integer("absent", required: false, in: 1...2) == nil)
        #expect(body.errors.isEmpty)
        #expect(body.integer("big", required: true, in: 1...100) == nil)
        #expect(body.integer("frac", required: true, in: 1...100) == nil)
        #expect(body.number("nan", required: true, in: 0...1) == nil)
        #expect(body.bool("flag", required: true) == nil)
        #expect(body.integer("missing", required: true, in: 1...2) == nil)
        #expect(
            body.errors.compactMap { error -> String? in
                if case .body(let pointer) = error.location { return pointer } else { return nil }
            } == ["/big", "/frac", "/nan", "/flag", "/missing"]
        )
        #expect(throws: Problem.self) { try body.validate() }
        #expect(throws: Problem.self) { try JSONObject(Array("[1,2]".utf8)) }
    }
}
