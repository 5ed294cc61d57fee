import AsyncHTTPClient
import Foundation
import NIOHTTP1
import Synchronization
import TestSupport

/// What the three apps do through the gateway, a few people at once, the way their clients do it
/// when the backend stumbles: a call that gets no answer, or a 502, 503 or 504, is made again after
/// a backoff (a write under the same `Idempotency-Key`) for up to 30 s. Each person, in turns:
/// signs in again or refreshes the session now and then, browses and searches the catalog, likes
/// or takes back a like, reads the feed, and in some rounds previews and saves an edit (the first
/// three people), posts, orders
/// from the kitchen (the first four; the kitchen moves each order to ready for pickup, the
/// simulated drivers doing the rest) and brings a new person who signs up. What each
/// write was finally answered is kept for the invariant checks.
final class MixedWorkload: Sendable {
    struct Person: Sendable {
        var id: String
        var email: String
        var token: String
        var refreshToken: String
    }

    /// What the run did, as far as the answers tell.
    struct Outcome: Sendable {
        /// Accounts whose sign-up was answered 200.
        var accounts: [String] = []
        /// Edits answered 201 or 202: their id and owner.
        var edits: [String: String] = [:]
        var posts: [String] = []
        var orders: [String] = []
        /// Whether each person likes each photo (`user|photoKey`), as the last answered toggle
        /// left it; `nil` once a toggle went unanswered (its effect is unknown).
        var likes: [String: Bool?] = [:]
        /// Every final answer, by endpoint and status (0: none came).
        var answers: [String: [Int: Int]] = [:]
        /// The answers that made a client try again (0: none came), by status.
        var retried: [Int: Int] = [:]
        /// Any answer a client must never get (a 500 or another 5xx than 502-504), with its body.
        var brokenAnswers: [String] = []
        /// Moves the kitchen could not make.
        var failedMoves: [String] = []

        func count(_ endpoint: String, where accepted: (Int) -> Bool) -> Int {
            (answers[endpoint] ?? [:]).filter { accepted($0.key) }.values.reduce(0, +)
        }
    }

    let gateway: String
    private let outcome = Mutex(Outcome())
    private let kitchenQueue = Mutex<[String]>([])

    init(gateway: String) {
        self.gateway = gateway
    }

    var result: Outcome { outcome.withLock { $0 } }

    // MARK: Calls

    /// One call; status 0 when no answer came within 10 s.
    private func send(
        _ method: HTTPMethod,
        _ path: String,
        token: String?,
        json: Any?,
        headers: [(String, String)]
    ) async -> (status: Int, body: [String: Any]) {
        (try? await jsonRequest(method, gateway + path, token: token, json: json, headers: headers, timeout: .seconds(10))) ?? (0, [:])
    }

    /// A call made again while the answer is none or a 502/503/504, up to `patience`; its final
    /// answer is recorded under `endpoint`.
    @discardableResult
    func call(
        _ endpoint: String,
        _ method: HTTPMethod,
        _ path: String,
        token: String?,
        json: Any? = nil,
        headers: [(String, String)] = [],
        retrying: Bool = true,
        patience: Duration = .seconds(30)
    ) async -> (status: Int, body: [String: Any]) {
        let start = ContinuousClock.now
        var backoff = Duration.milliseconds(250)
        var answer = await send(method, path, token: token, json: json, headers: headers)
        while retrying, [0, 502, 503, 504].contains(answer.status), ContinuousClock.now - start < patience {
            let status = answer.status
            outcome.withLock { $0.retried[status, default: 0] += 1 }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(1))
            answer = await send(method, path, token: token, json: json, headers: headers)
        }
        let status = answer.status
        outcome.withLock { outcome in
            outcome.answers[endpoint, default: [:]][status, default: 0] += 1
            if status >= 500, ![502, 503, 504].contains(status) { outcome.brokenAnswers.append("\(endpoint): \(status) \(answer.body)") }
        }
        return answer
    }

    // MARK: The people

    /// Signs a new person up through the gateway (not retried: a second try would be another
    /// sign-up); `nil` when it was not answered 200.
    func signUp(_ name: String) async -> Person? {
        let email = "\(name)-\(UUID().uuidString.prefix(8).lowercased())@system.splash.example"
        let answer = await call(
            "POST /auth/v1/signup",
            .POST,
            "/auth/v1/signup",
            token: nil,
            json: [
                "email": email, "password": "a long password 1", "data": ["username": "\(name)_\(UUID().uuidString.prefix(6).lowercased())"],
            ],
            retrying: false
        )
        guard answer.status == 200, let token = answer.body["access_token"] as? String, let refresh = answer.body["refresh_token"] as? String,
            let id = (answer.body["user"] as? [String: Any])?["id"] as? String
        else { return nil }
        outcome.withLock { $0.accounts.append(id) }
        return Person(id: id, email: email, token: token, refreshToken: refresh)
    }

    /// `people` each doing their rounds until `duration` has passed, and the kitchen moving their
    /// orders until every one is moved (for at most 60 s more).
    func run(for duration: Duration, people: [Person], photos: [String], restaurant: String, kitchen: String) async {
        let end = ContinuousClock.now + duration
        let peopleDone = Flag()
        let moving = Task { await self.kitchen(kitchen, until: end + .seconds(60), peopleDone: peopleDone) }
        await withTaskGroup(of: Void.self) { group in
            for (index, person) in people.enumerated() {
                group.addTask { await self.rounds(of: person, index: index, until: end, photos: photos, restaurant: restaurant) }
            }
        }
        peopleDone.set()
        await moving.value
    }

    private func rounds(of person: Person, index: Int, until end: ContinuousClock.Instant, photos: [String], restaurant: String) async {
        var person = person
        var round = 0
        while ContinuousClock.now < end {
            round += 1
            if round % 8 == 4 {
                // Signing in again, as on another device (each answer a session of its own).
                await call(
                    "POST /auth/v1/token?grant_type=password",
                    .POST,
                    "/auth/v1/token?grant_type=password",
                    token: nil,
                    json: ["email": person.email, "password": "a long password 1"]
                )
            }
            if round % 6 == 0 {
                // The session is refreshed, as an app does before its token expires (a lost answer
                // leaves the old tokens in use).
                let refreshed = await call(
                    "POST /auth/v1/token?grant_type=refresh_token",
                    .POST,
                    "/auth/v1/token?grant_type=refresh_token",
                    token: nil,
                    json: ["refresh_token": person.refreshToken],
                    retrying: false
                )
                if refreshed.status == 200, let token = refreshed.body["access_token"] as? String,
                    let refresh = refreshed.body["refresh_token"] as? String
                {
                    (person.token, person.refreshToken) = (token, refresh)
                }
            }
            let photo = photos[(round + index) % photos.count]
            await call("GET /v1/photos", .GET, "/v1/photos?page=\(round % 3 + 1)&per_page=10", token: round % 2 == 0 ? person.token : nil)
            await call("GET /v1/search/photos", .GET, "/v1/search/photos?query=\(["flower", "aqua", "green"][round % 3])&per_page=5", token: nil)
            await call("GET /v1/photos/{id}", .GET, "/v1/photos/\(photo)", token: person.token)
            await toggleLike(of: "unsplash:\(photo)", by: person)
            if round % 6 == 3, index < 3 {
                // A live preview, rendered while the person waits.
                await call(
                    "POST /v1/edits/preview",
                    .POST,
                    "/v1/edits/preview",
                    token: person.token,
                    json: [
                        "source": ["unsplashPhotoId": photo], "filters": [["name": "sepia", "intensity": 0.8]],
                    ]
                )
            }
            if round % 6 == 0, index < 3 {
                let edit = await call(
                    "POST /v1/edits",
                    .POST,
                    "/v1/edits",
                    token: person.token,
                    json: [
                        "source": ["unsplashPhotoId": photo], "filters": [["name": "sepia"]], "output": ["longestEdge": 320],
                    ],
                    headers: [("Idempotency-Key", UUID().uuidString)]
                )
                if [201, 202].contains(edit.status), let id = edit.body["id"] as? String {
                    outcome.withLock { $0.edits[id] = person.id }
                    await call("GET /v1/edits/{id}", .GET, "/v1/edits/\(id)", token: person.token)
                }
            }
            if round % 5 == 0 {
                let post = await call(
                    "POST /v1/posts",
                    .POST,
                    "/v1/posts",
                    token: person.token,
                    json: [
                        "photo": ["unsplashPhotoId": photo], "caption": "Round \(round) of \(index)",
                    ],
                    headers: [("Idempotency-Key", UUID().uuidString)]
                )
                if post.status == 201, let id = post.body["id"] as? String { outcome.withLock { $0.posts.append(id) } }
            }
            await call("GET /v1/feed", .GET, "/v1/feed?limit=20", token: person.token)
            if round % 4 == 0, index < 4 {
                let order = await call(
                    "POST /v1/orders",
                    .POST,
                    "/v1/orders",
                    token: person.token,
                    json: [
                        "restaurantId": restaurant, "items": [["menuItemId": "m1", "quantity": 1 + round % 3]],
                        "dropoff": ["address": "Senate Square", "lat": 60.1694, "lng": 24.9526],
                    ],
                    headers: [("Idempotency-Key", UUID().uuidString)]
                )
                if order.status == 201, let id = order.body["id"] as? String {
                    outcome.withLock { $0.orders.append(id) }
                    kitchenQueue.withLock { $0.append(id) }
                }
            }
            if round % 10 == 0 { _ = await signUp("sys\(index)") }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    private func toggleLike(of photoKey: String, by person: Person) async {
        let key = "\(person.id)|\(photoKey)"
        let liked = outcome.withLock { $0.likes[key] ?? false } ?? false
        let answer =
            liked
            ? await call("DELETE /v1/likes/{photoKey}", .DELETE, "/v1/likes/\(photoKey)", token: person.token)
            : await call("PUT /v1/likes/{photoKey}", .PUT, "/v1/likes/\(photoKey)", token: person.token)
        let now: Bool?? =
            switch answer.status {
            case 200: .some(true)
            case 201 where !liked: .some(true)
            case 204 where liked: .some(false)
            case 0, 502, 503, 504: .some(nil)
            default: nil  // refused, nothing changed
            }
        if let now { outcome.withLock { $0.likes[key] = now } }
    }

    /// The restaurant's kitchen: each order placed is accepted, prepared and readied for pickup,
    /// under `If-Match: *`; a move whose answer was lost is read back.
    private func kitchen(_ token: String, until end: ContinuousClock.Instant, peopleDone: Flag) async {
        while ContinuousClock.now < end {
            guard let order = kitchenQueue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                if peopleDone.isSet { return }
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            for status in ["accepted", "preparing", "ready_for_pickup"] {
                let moved = await call(
                    "POST /v1/orders/{id}/transitions",
                    .POST,
                    "/v1/orders/\(order)/transitions",
                    token: token,
                    json: ["to": status],
                    headers: [("If-Match", "*")]
                )
                guard moved.status != 200 else { continue }
                let now = await call("GET /v1/orders/{id}", .GET, "/v1/orders/\(order)", token: token)
                if now.body["status"] as? String != status {
                    outcome.withLock {
                        $0.failedMoves.append("\(order) to \(status): \(moved.status) \(moved.body), now \(now.body["status"] ?? "?")")
                    }
                    break
                }
            }
        }
    }
}
