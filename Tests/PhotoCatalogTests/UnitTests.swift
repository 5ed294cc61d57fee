import Foundation
import NIOCore
import ServiceKit
import Testing

@testable import PhotoCatalog

/// The catalog's own rules, without a network: request normal forms, the budget, pagination links,
/// validators and how Unsplash's answers are classified.
@Suite("photo-catalog rules")
struct UnitTests {
    @Test func equivalentSearchesShareOneKey() throws {
        let a = try UnsplashRequest.search(QueryString("query=%20Mountain%20%20LAKE&per_page=10"))
        let b = try UnsplashRequest.search(QueryString("page=1&query=mountain+lake&order_by=relevant&content_filter=low"))
        #expect(a.cacheKey == b.cacheKey)
        #expect(a.cacheKey == "search/photos?content_filter=low&order_by=relevant&page=1&per_page=10&query=mountain%20lake")
        let c = try UnsplashRequest.search(QueryString("query=mountain+lake&page=2"))
        #expect(c.cacheKey != a.cacheKey)
        let collections = try UnsplashRequest.search(QueryString("query=x&collections=b2,a1,%20b2"))
        #expect(collections.cacheKey.contains("collections=a1%2Cb2"))
        // An empty list is no filter (schemathesis found it refused, though the document allows it).
        #expect(
            try UnsplashRequest.search(QueryString("query=x&collections=")).cacheKey == (try UnsplashRequest.search(QueryString("query=x"))).cacheKey
        )
        // Characters that mean something in a URL stay inside the value.
        let tricky = try UnsplashRequest.search(QueryString("query=cats%26page%3D9%23x"))
        #expect(tricky.cacheKey.hasSuffix("query=cats%26page%3D9%23x"))
        #expect(UnsplashRequest.photo(id: "../etc") == nil)
        #expect(UnsplashRequest.photo(id: "LBI7cgq3pbM")?.cacheKey == "photos/LBI7cgq3pbM")
    }

    @Test func theBudgetBlocksBelowTheReserveUntilItsWindowEnds() {
        let start = Date(timeIntervalSince1970: 1_000_000)
        var budget = BudgetState()
        #expect(budget.wait(reserve: 10, now: start) == nil)
        budget.observe(quota: 50, remaining: 49, rateLimited: false, now: start, window: .seconds(3_600))
        #expect(budget.resetsAt == start.addingTimeInterval(3_600))
        budget.observe(quota: 50, remaining: 10, rateLimited: false, now: start.addingTimeInterval(600), window: .seconds(3_600))
        #expect(budget.resetsAt == start.addingTimeInterval(3_600), "the window runs from its first call")
        #expect(budget.wait(reserve: 10, now: start.addingTimeInterval(600)) == .seconds(3_000))
        #expect(budget.wait(reserve: 9, now: start.addingTimeInterval(600)) == nil)
        #expect(budget.wait(reserve: 10, now: start.addingTimeInterval(3_600)) == nil)

        // A rate limit blocks whatever the reserve.
        var limited = BudgetState()
        limited.observe(quota: nil, remaining: nil, rateLimited: true, now: start, window: .seconds(60))
        #expect(limited.wait(reserve: 0, now: start.addingTimeInterval(30)) == .seconds(30))
        // A refilled budget starts a new window.
        budget.observe(quota: 50, remaining: 49, rateLimited: false, now: start.addingTimeInterval(3_700), window: .seconds(3_600))
        #expect(budget.resetsAt == start.addingTimeInterval(7_300))
    }

    @Test func paginationLinksFollowUnsplash() {
        let middle = Pagination(total: 133, page: 2, perPage: 10)
        #expect(
            middle.link(base: "https://s.test/v1/search/photos", parameters: [(name: "query", value: "a b")])
                == "<https://s.test/v1/search/photos?page=1&query=a%20b>; rel=\"first\", <https://s.test/v1/search/photos?page=1&query=a%20b>; rel=\"prev\", "
                + "<https://s.test/v1/search/photos?page=14&query=a%20b>; rel=\"last\", <https://s.test/v1/search/photos?page=3&query=a%20b>; rel=\"next\""
        )
        #expect(Pagination(total: 5, page: 1, perPage: 10).link(base: "b", parameters: []) == nil)
        #expect(Pagination(total: 0, page: 1, perPage: 10).lastPage == 1)
    }

    @Test func rateLimitingIsRecognisedInBothForms() {
        #expect(UnsplashClient.outcome(status: 429, body: ByteBuffer()) == .rateLimited)
        #expect(UnsplashClient.outcome(status: 403, body: ByteBuffer(string: "Rate Limit Exceeded\n")) == .rateLimited)
        #expect(UnsplashClient.outcome(status: 403, body: ByteBuffer(string: "{\"errors\":[\"Forbidden\"]}")) == .failed(status: 403))
        #expect(UnsplashClient.outcome(status: 503, body: ByteBuffer(string: "<html>")) == .failed(status: 503))
        #expect(UnsplashClient.outcome(status: 404, body: ByteBuffer()) == .notFound)
    }

    @Test func cacheStatusFollowsRFC9211() {
        #expect(CacheStatus.hit(ttl: 30).headerValue == "photo-catalog; hit; ttl=30")
        #expect(
            CacheStatus.staleIfError(ttl: -5, upstreamStatus: 429).headerValue
                == "photo-catalog; fwd=stale; fwd-status=429; ttl=-5; detail=stale-if-error"
        )
        #expect(CacheStatus.stored(upstreamStatus: 200).headerValue == "photo-catalog; fwd=uri-miss; fwd-status=200; stored")
    }

    @Test func hotAnswersStayWithinTheirBytesAndServeOnlyFreshOnes() {
        let hot = HotAnswers(maxBytes: 1_000)
        let now = Date()
        for index in 0..<30 {
            hot.remember(
                "k\(index)",
                CachedAnswer(status: 200, body: ByteBuffer(repeating: 1, count: 100), total: nil, storedAt: now, lifetime: .seconds(60))
            )
        }
        let kept = (0..<30).filter { hot.fresh("k\($0)", at: now) != nil }
        #expect(kept.count == 10)
        #expect(kept.contains(29), "the newest is kept")
        #expect(hot.fresh("k29", at: now.addingTimeInterval(61)) == nil, "expired answers are not served")
        hot.remember("big", CachedAnswer(status: 200, body: ByteBuffer(repeating: 1, count: 200), total: nil, storedAt: now, lifetime: .seconds(60)))
        #expect(hot.fresh("big", at: now) == nil, "an answer larger than an eighth of the budget is not kept")
    }
}
