/// Unsplash's pagination headers for one page of a list or search: `X-Total`, `X-Per-Page` and
/// `Link` with `first`, `prev`, `last` and `next` as they apply, pointing at Splash's own URLs (so
/// a client following them stays on Splash).
struct Pagination: Sendable, Equatable {
    var total: Int
    var page: Int
    var perPage: Int

    var lastPage: Int { max(1, (total + perPage - 1) / perPage) }

    /// The `Link` header value; `nil` when there is a single page.
    func link(base: String, parameters: [(name: String, value: String)]) -> String? {
        func url(_ page: Int) -> String {
            "<\(base)?\(QueryString.encode([(name: "page", value: "\(page)")] + parameters))>"
        }
        var links: [String] = []
        if page > 1 {
            links.append("\(url(1)); rel=\"first\"")
            links.append("\(url(min(page - 1, lastPage))); rel=\"prev\"")
        }
        if page < lastPage {
            links.append("\(url(lastPage)); rel=\"last\"")
            links.append("\(url(page + 1)); rel=\"next\"")
        }
        return links.isEmpty ? nil : links.joined(separator: ", ")
    }
}
