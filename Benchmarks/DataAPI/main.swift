// The data API's own cost per request, in-process: parsing a PostgREST query string (and its
// headers' preferences) and rendering its SQL over a table description, for three requests the
// apps send. No network, no database: what /rest/v1 adds before Postgres is asked.
//
// Usage: DataAPIBenchmark [--iterations 200000] [--rounds 5]

import DataAPI
import Foundation
import HTTPTypes
import TestSupport

let iterations = BenchmarkArguments.integer("--iterations", default: 200_000)
let rounds = BenchmarkArguments.integer("--rounds", default: 5)

let posts = TableDescription(
    name: "posts",
    source:
        "(SELECT p.id, p.user_id, p.caption, 'posts/' || o.name AS object_key, p.photo_key, p.created_at FROM posts p LEFT JOIN objects o ON o.id = p.object_id) posts",
    columns: [
        .init("id", .uuid), .init("user_id", .uuid), .init("caption", .text), .init("object_key", .text), .init("photo_key", .text),
        .init("created_at", .timestamptz),
    ],
    primaryKey: ["id"]
)
let likes = TableDescription(
    name: "likes",
    source: "likes",
    columns: [.init("user_id", .uuid), .init("photo_key", .text), .init("created_at", .timestamptz)],
    primaryKey: ["user_id", "photo_key"]
)
let requests: [(name: String, table: TableDescription, query: String, headers: HTTPFields)] = [
    ("the feed's page", posts, "select=id,user_id,caption,object_key,created_at&order=created_at.desc&limit=20", [.accept: "application/json"]),
    (
        "a user's likes, filtered", likes,
        "select=photo_key,liked_at:created_at&user_id=eq.6F9619FF-8B86-D011-B42D-00C04FC964FF&photo_key=not.ilike.*edit*&created_at=gte.2026-01-01&order=created_at.desc.nullslast&limit=50&offset=100",
        [.accept: "*/*", HTTPField.Name("Prefer")!: "count=exact", HTTPField.Name("Accept-Profile")!: "public"]
    ),
    (
        "in.(100 keys) + .single()", likes,
        "select=*&photo_key=in.(" + (0..<100).map { "\"unsplash:photo-\($0)\"" }.joined(separator: ",")
            + ")&user_id=eq.6f9619ff-8b86-d011-b42d-00c04fc964ff",
        [.accept: "application/vnd.pgrst.object+json"]
    ),
]

print("== the data API in-process: parse the query string and headers, render the SQL (\(iterations) requests per round, \(rounds) rounds) ==")
for request in requests {
    let renderer = SQLRenderer(table: request.table)
    var perRequest: [Double] = []
    var sink = 0
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        for _ in 0..<iterations {
            let preferences = try RequestPreferences(request.headers)
            let query = try DataQuery(query: request.query)
            let sql = try renderer.read(query)
            sink &+= sql.sql.utf8.count &+ (preferences.count ? 1 : 0)
        }
        let elapsed = ContinuousClock.now - start
        perRequest.append(
            Double(elapsed.components.seconds) * 1e6 / Double(iterations) + Double(elapsed.components.attoseconds) / 1e12 / Double(iterations)
        )
    }
    let sorted = perRequest.sorted()
    let name = request.name.padding(toLength: 28, withPad: " ", startingAt: 0)
    print(
        "  \(name) median " + String(format: "%.2f µs per request   (rounds %.2f–%.2f µs)", sorted[sorted.count / 2], sorted.first!, sorted.last!)
            + (sink == 0 ? " (no SQL?)" : "")
    )
}
