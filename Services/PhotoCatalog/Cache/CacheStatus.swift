/// How an answer was produced, written as an RFC 9211 `Cache-Status` header:
///
/// | case | header |
/// |---|---|
/// | fresh from the cache | `photo-catalog; hit; ttl=532` |
/// | fetched for this request | `photo-catalog; fwd=uri-miss; fwd-status=200; stored` |
/// | fetched by a concurrent identical request (here or on another replica) | `photo-catalog; fwd=uri-miss; collapsed` |
/// | stale, refreshed behind it | `photo-catalog; hit; ttl=-40; detail=stale-while-revalidate` |
/// | stale because Unsplash failed, rate-limited or the budget is spent | `photo-catalog; fwd=stale; fwd-status=429; ttl=-4000; detail=stale-if-error` |
/// | the offline fixture set | `photo-catalog; hit; detail=fixtures` |
enum CacheStatus: Sendable, Equatable {
    case hit(ttl: Int)
    case stored(upstreamStatus: Int)
    case collapsed
    case staleWhileRevalidate(ttl: Int)
    /// `upstreamStatus` is nil when Unsplash was not asked (budget reserve) or did not answer.
    case staleIfError(ttl: Int, upstreamStatus: Int?)
    /// Nothing cached and Unsplash unavailable: the 503.
    case unavailable(upstreamStatus: Int?)
    case fixtures

    static let cacheName = "photo-catalog"

    var headerValue: String {
        let parameters: String
        switch self {
        case .hit(let ttl): parameters = "hit; ttl=\(ttl)"
        case .stored(let status): parameters = "fwd=uri-miss; fwd-status=\(status); stored"
        case .collapsed: parameters = "fwd=uri-miss; collapsed"
        case .staleWhileRevalidate(let ttl): parameters = "hit; ttl=\(ttl); detail=stale-while-revalidate"
        case .staleIfError(let ttl, let status):
            parameters = "fwd=stale\(status.map { "; fwd-status=\($0)" } ?? ""); ttl=\(ttl); detail=stale-if-error"
        case .unavailable(let status): parameters = "fwd=uri-miss\(status.map { "; fwd-status=\($0)" } ?? ""); detail=upstream-unavailable"
        case .fixtures: parameters = "hit; detail=fixtures"
        }
        return "\(Self.cacheName); \(parameters)"
    }

    /// The `result` label of `catalog_cache_lookups_total`.
    var metricLabel: String {
        switch self {
        case .hit, .fixtures: "hit"
        case .stored: "miss"
        case .collapsed: "collapsed"
        case .staleWhileRevalidate, .staleIfError: "stale"
        case .unavailable: "unavailable"
        }
    }
}
