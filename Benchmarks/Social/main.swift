import AsyncHTTPClient
import Foundation
import LocalStack
import Logging
import PostgresNIO
import ServiceKit
import TestSupport

// social's figures (`make bench-social`), each beside its baseline in the same run (SplashEdit's
// liked_photos beside /v1/likes, a delta sync's server time alone):
//  1. the feed's first page (20 posts with their authors, like counts, likedByMe and signed media
//     links) with 100,000 posts and 1,000,000 likes in the database: wrk at 32 connections through
//     the gateway and straight to social, against the same query written by hand and run by
//     pgbench as social's role, in a transaction with the viewer set (as PostgREST would) — our
//     overhead over the database itself; and the query's plan, which must use no sequential scan;
//  2. like toggles per second at 32 connections through the gateway (each a real change, with its
//     outbox event), against the feed's rate in the same run.
// social and the gateway run as their own processes (release builds) against the test support's
// Postgres and embedded broker, with a fake photo-catalog publishing the token key; wrk and
// pgbench share the same two cores.
let seconds = BenchmarkArguments.integer("--seconds", default: 10)
let connections = BenchmarkArguments.integer("--connections", default: 32)
let postCount = BenchmarkArguments.integer("--posts", default: 100_000)
let likesPerPost = BenchmarkArguments.integer("--likes-per-post", default: 10)
// Postgres shares the two cores: a few connections serve it best (16 gave a p99 of 185 ms,
// 6 one of 28 ms, at about the same throughput).
let poolSize = BenchmarkArguments.integer("--pool", default: 6)

func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }
func note(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

// MARK: The stack

let catalog = FakePhotoCatalog(images: [:])
try await catalog.start()
let database = try await TestPostgres.shared.makeDatabase()
let rolePassword = "bench"
let (role, databaseURL) = try await database.makeServiceRole(schema: "social", password: rolePassword)
let kafka = try await TestKafka.shared.running()
let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("social-bench-\(getpid())")
let issuer = "http://localhost:8080/auth/v1"
let social = try await ServiceProcess(
    "social",
    environment: [
        "DATABASE_URL": databaseURL, "DATABASE_POOL_SIZE": String(poolSize), "LOG_LEVEL": "error",
        "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
        "SOCIAL_JWKS_URL": catalog.baseURL + "/jwks.json", "SOCIAL_JWT_ISSUER": issuer,
        "SOCIAL_BLOB_DIR": blobs.path, "RENDER_MEDIA_KEY": "media-signing-key-for-benchmarks-0123456789",
        "SOCIAL_PHOTO_CATALOG_URL": catalog.baseURL, "SOCIAL_PROJECTION_GROUP": "social-bench-\(getpid())",
    ]
)
let unlimited = "100000000/1m"
let gateway = try await ServiceProcess(
    "gateway",
    environment: [
        "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms", "LOG_LEVEL": "error",
        "GATEWAY_AUTH_URL": catalog.baseURL, "GATEWAY_JWKS_URL": catalog.baseURL + "/jwks.json", "GATEWAY_JWT_ISSUER": issuer,
        "GATEWAY_SOCIAL_URL": social.baseURL, "GATEWAY_RATE_LIMIT_SOCIAL": unlimited, "GATEWAY_RATE_LIMIT_DATA_SOCIAL": unlimited,
    ]
)

// MARK: The data

/// The user id of person `n` (1…10,000).
func person(_ n: Int) -> String { "00000000-0000-4000-8000-\(String(format: "%012x", n))" }
let viewer = person(1)

let seeding = ContinuousClock.now
try await database.withClient { client in
    let statements = [
        // Counts are computed once below rather than by the trigger a million times.
        "ALTER TABLE social.likes DISABLE TRIGGER likes_counted",
        "INSERT INTO social.profiles (user_id, username, updated_at) SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'person' || g, now() FROM generate_series(1, 10000) g",
        """
        INSERT INTO social.objects (id, bucket, name, owner_id, state, blob_key, size, mime_type, width, height)
        SELECT ('10000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'posts',
               '00000000-0000-4000-8000-' || lpad(to_hex(g % 1000 + 1), 12, '0') || '/photo-' || g || '.jpg',
               ('00000000-0000-4000-8000-' || lpad(to_hex(g % 1000 + 1), 12, '0'))::uuid, 'attached',
               'posts/' || g, 400000, 'image/jpeg', 1080, 720
        FROM generate_series(1, \(postCount)) g
        """,
        """
        INSERT INTO social.posts (id, user_id, photo, photo_key, object_id, media_width, media_height, caption, idempotency_key, request_hash, created_at)
        SELECT ('20000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, ('00000000-0000-4000-8000-' || lpad(to_hex(g % 1000 + 1), 12, '0'))::uuid,
               jsonb_build_object('objectKey', 'posts/00000000-0000-4000-8000-' || lpad(to_hex(g % 1000 + 1), 12, '0') || '/photo-' || g || '.jpg'),
               'post:20000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'), ('10000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
               1080, 720, 'Caption number ' || g, 'seed-' || g, 'seed', now() - (\(postCount) - g) * interval '1 second'
        FROM generate_series(1, \(postCount)) g
        """,
        // Every post liked by \(likesPerPost) people; the viewer likes every third.
        """
        INSERT INTO social.likes (user_id, photo_key, created_at)
        SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(CASE WHEN k = 0 AND g % 3 = 0 THEN 1 ELSE (g + k * 997) % 9999 + 2 END), 12, '0'))::uuid,
               'post:20000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'), now()
        FROM generate_series(1, \(postCount)) g, generate_series(0, \(likesPerPost - 1)) k
        """,
        "INSERT INTO social.like_counts (photo_key, likes) SELECT photo_key, count(*) FROM social.likes GROUP BY photo_key",
        "ALTER TABLE social.likes ENABLE TRIGGER likes_counted",
        "VACUUM ANALYZE",
    ]
    for statement in statements {
        try await client.query(PostgresQuery(unsafeSQL: statement))
    }
}
let (posts, likes) = try await (database.count("social.posts"), database.count("social.likes"))
note("seeded \(posts) posts, \(likes) likes, 10,000 people in \(seeding.duration(to: .now))")

// MARK: 1. The feed

let token = try testAccessToken(user: UUID(uuidString: viewer)!, key: catalog.key, issuer: issuer)
let feedPath = "/v1/feed?limit=20"
let check = try await HTTPClient.shared.execute(
    {
        var r = HTTPClientRequest(url: gateway.baseURL + feedPath)
        r.headers.add(name: "Authorization", value: "Bearer \(token)")
        return r
    }(),
    timeout: .seconds(10)
)
let firstPage = try JSONSerialization.jsonObject(with: Data(buffer: try await check.body.collect(upTo: 1 << 20))) as? [String: Any]
let items = firstPage?["items"] as? [[String: Any]] ?? []
precondition(check.status.code == 200 && items.count == 20, "the feed answered \(check.status) with \(items.count) items")
precondition(
    items.contains { $0["likedByMe"] as? Bool == true } && items.allSatisfy { ($0["likeCount"] as? Int ?? 0) >= likesPerPost },
    "the seeded likes do not show"
)
note(
    "feed page: \(items.count) posts, first by \((items[0]["author"] as? [String: Any])?["username"] ?? "?"), \(items[0]["likeCount"] ?? 0) likes, media \(((items[0]["media"] as? [String: Any])?["url"] as? String)?.prefix(60) ?? "?")…"
)

/// The feed's query as PostgREST would run it for the viewer: one transaction, the viewer set for
/// row-level security, every join written by hand.
let feedSQL = """
    SELECT p.id, p.user_id, pr.username, pr.avatar_url, p.photo::text, p.photo_key, p.caption, p.unsplash_url, o.name,
           p.media_width, p.media_height, coalesce(c.likes, 0), l.liked IS NOT NULL, p.created_at
    FROM social.posts p
    LEFT JOIN social.profiles pr ON pr.user_id = p.user_id
    LEFT JOIN social.like_counts c ON c.photo_key = p.photo_key
    LEFT JOIN social.objects o ON o.id = p.object_id
    LEFT JOIN LATERAL (SELECT true AS liked FROM social.likes WHERE user_id = '\(viewer)' AND photo_key = p.photo_key LIMIT 1) l ON true
    ORDER BY p.created_at DESC, p.id DESC LIMIT 21
    """

let environment = ["PGPASSWORD": rolePassword]
let postgresBin = try PostgresBinaries.locate(environment: ProcessInfo.processInfo.environment).directory
let psqlArguments = ["-h", "127.0.0.1", "-p", String(database.port), "-U", role, "-d", database.name, "-X", "-q", "-v", "ON_ERROR_STOP=1"]
for (title, sql) in [
    ("first page", feedSQL),
    (
        "a later page",
        feedSQL.replacingOccurrences(
            of: "ORDER BY",
            with: "WHERE (p.created_at, p.id) < (now() - interval '50000 seconds', '20000000-0000-4000-8000-000000000000') ORDER BY"
        )
    ),
] {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("explain-\(getpid()).sql")
    try "BEGIN;\nSET LOCAL app.user_id = '\(viewer)';\nEXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) \(sql);\nCOMMIT;\n"
        .write(to: file, atomically: true, encoding: .utf8)
    let plan = try await ProcessCommand(postgresBin.appendingPathComponent("psql"), psqlArguments + ["-f", file.path], environment: environment)
        .runToCompletion()
    try? FileManager.default.removeItem(at: file)
    note("\nEXPLAIN ANALYZE, the feed's \(title), as social's role with the viewer set:\n\(plan)")
    precondition(!plan.contains("Seq Scan"), "the feed's plan has a sequential scan")
}

/// The feed's query by pgbench at `connections`: as PostgREST runs it (a transaction with the
/// viewer set) unless `sql` is given.
func pgbench(seconds: Int, sql: String? = nil) async throws -> (tps: Double, latency: LatencyHistogram) {
    let script =
        sql.map { "\($0);\n" }
        ?? "BEGIN;\nSELECT set_config('app.user_id', '\(viewer)', true);\n\(feedSQL.split(separator: "\n").joined(separator: " "));\nCOMMIT;\n"
    return try await PGBench.run(script, database: database, role: role, password: rolePassword, clients: connections, seconds: seconds)
}

let headers = ["Authorization: Bearer \(token)"]
_ = try await Wrk.run(gateway.baseURL + feedPath, seconds: 2, connections: connections, headers: headers)  // warm-up
let throughGateway = try await Wrk.run(gateway.baseURL + feedPath, seconds: seconds, connections: connections, headers: headers)
let direct = try await Wrk.run(social.baseURL + feedPath, seconds: seconds, connections: connections, headers: headers)
let database32 = try await pgbench(seconds: seconds)
/// social's own statement for the first page, as `FeedStatement<FeedFirstPage>` writes it (keep the two
/// alike): the viewer set in its first step.
let socialSQL = """
    SELECT page.* FROM (SELECT set_config('app.user_id', '\(viewer)', true) AS viewer) AS reader
    CROSS JOIN LATERAL (SELECT p.*, l.liked IS NOT NULL FROM social.post_cards p
        LEFT JOIN LATERAL (SELECT true AS liked FROM social.likes WHERE likes.user_id = '\(viewer)' AND likes.photo_key = p.photo_key LIMIT 1) l ON true
        WHERE reader.viewer IS NOT NULL ORDER BY p.created_at DESC, p.id DESC LIMIT 21) AS page
    """
let statement32 = try await pgbench(seconds: seconds, sql: socialSQL.split(separator: "\n").joined(separator: " "))

// MARK: 1b. The same page through the data API

/// The feed's first page as `supabase.from("posts").select(…).order("created_at", desc).limit(20)`
/// asks it, against `/v1/feed` in the same run: rounds alternating the two, so drift in the
/// machine's load falls on both.
let restPath = "/rest/v1/posts?select=id,user_id,caption,object_key,created_at&order=created_at.desc&limit=20"
let restCheck = try await HTTPClient.shared.execute(
    {
        var r = HTTPClientRequest(url: gateway.baseURL + restPath)
        r.headers.add(name: "Authorization", value: "Bearer \(token)")
        return r
    }(),
    timeout: .seconds(10)
)
let restRows = try JSONSerialization.jsonObject(with: Data(buffer: try await restCheck.body.collect(upTo: 1 << 20))) as? [[String: Any]] ?? []
precondition(restCheck.status.code == 200 && restRows.count == 20, "/rest/v1/posts answered \(restCheck.status) with \(restRows.count) rows")
precondition(restRows.map { $0["id"] as? String } == items.map { $0["id"] as? String }, "/rest/v1/posts and /v1/feed disagree on the first page")
_ = try await Wrk.run(gateway.baseURL + restPath, seconds: 2, connections: connections, headers: headers)  // warm-up
var rounds: [(feed: Wrk.Result, rest: Wrk.Result)] = []
for _ in 0..<3 {
    let feed = try await Wrk.run(gateway.baseURL + feedPath, seconds: seconds, connections: connections, headers: headers)
    let rest = try await Wrk.run(gateway.baseURL + restPath, seconds: seconds, connections: connections, headers: headers)
    rounds.append((feed, rest))
}

// MARK: 1c. SplashEdit's liked_photos against /v1/likes

/// The viewer's likes of 100 Unsplash photos (their data kept, as a like keeps it), newest first:
/// a page of `/rest/v1/liked_photos` as SplashEdit reads it against the typed `/v1/likes`, rounds
/// alternating.
try await database.withClient { client in
    try await client.query(
        """
        INSERT INTO social.unsplash_photos (photo_id, photo)
        SELECT 'bench-' || n, jsonb_build_object('id', 'bench-' || n, 'width', 1080, 'height', 720,
               'urls', jsonb_build_object('regular', 'https://images.unsplash.com/photo-' || n || '?w=1080'))
        FROM generate_series(1, 100) n
        """
    )
    try await client.query(
        """
        INSERT INTO social.likes (user_id, photo_key, original_url, created_at)
        SELECT '\(unescaped: viewer)'::uuid, 'unsplash:bench-' || n, 'https://images.unsplash.com/photo-' || n || '?w=1080',
               now() + n * interval '1 millisecond'
        FROM generate_series(1, 100) n
        """
    )
}
let likedPath = "/v1/likes?limit=20"
let likedRestPath = "/rest/v1/liked_photos?select=*&order=created_at.desc&limit=20"
var likedRounds: [(typed: Wrk.Result, rest: Wrk.Result)] = []
_ = try await Wrk.run(gateway.baseURL + likedRestPath, seconds: 2, connections: connections, headers: headers)  // warm-up
for _ in 0..<3 {
    let typed = try await Wrk.run(gateway.baseURL + likedPath, seconds: seconds, connections: connections, headers: headers)
    let rest = try await Wrk.run(gateway.baseURL + likedRestPath, seconds: seconds, connections: connections, headers: headers)
    likedRounds.append((typed, rest))
}

// MARK: 2. Like toggles

/// 200 people, each toggling likes on the newest 2,000 posts: a PUT when the person does not like
/// the post yet, a DELETE when they do — every request a real change. Each wrk thread has its own
/// people, so no two connections toggle the same like at once.
let people = (0..<200).map { _ in UUID() }
let toggleTokens = try people.map { try testAccessToken(user: $0, key: catalog.key, issuer: issuer) }
let keys = (0..<2_000).map { "post:20000000-0000-4000-8000-\(String(format: "%012x", postCount - $0))" }
let toggles = """
    local tokens = {\(toggleTokens.map { "\"\($0)\"" }.joined(separator: ","))}
    local keys = {\(keys.map { "\"\($0)\"" }.joined(separator: ","))}
    local threads = 0
    setup = function(thread) thread:set("tid", threads); threads = threads + 1 end
    local liked = {}
    local n = 0
    request = function()
      n = n + 1
      local person = (n % (#tokens / 2)) * 2 + 1 + tid
      local key = math.random(#keys)
      local id = person .. ":" .. key
      local method = liked[id] and "DELETE" or "PUT"
      liked[id] = not liked[id]
      return wrk.format(method, "/v1/likes/" .. keys[key], { ["Authorization"] = "Bearer " .. tokens[person] })
    end
    """
let eventsBefore = try await database.count("social.outbox")
let toggled = try await Wrk.run(gateway.baseURL + "/v1/likes", seconds: seconds, connections: connections, requests: toggles)
let eventsAfter = try await database.count("social.outbox")
try await database.waitUntilOutboxIsPublished(schema: "social", timeout: .seconds(60))
// Every change has its event: the likes the toggling people hold are their liked events less
// their unliked ones.
let togglers = people.map { "'\($0.uuidString.lowercased())'" }.joined(separator: ",")
let heldLikes = try await database.count("social.likes", where: "user_id IN (\(togglers))")
let likedEvents = try await database.count("social.outbox", where: "type = 'social.photo.liked.v1' AND key IN (\(togglers))")
let unlikedEvents = try await database.count("social.outbox", where: "type = 'social.photo.unliked.v1' AND key IN (\(togglers))")
precondition(heldLikes == likedEvents - unlikedEvents, "\(heldLikes) likes held, \(likedEvents) liked and \(unlikedEvents) unliked events")

// MARK: 3. A delta sync's query

/// One person with 10,000 likes; 20 changes (10 unliked, 10 liked) after a token; the server time
/// of the sync's two statements (the changed rows, the tombstones), as `LikeStore` writes them,
/// by EXPLAIN ANALYZE as social's role with the person set, 100 times.
let syncer = UUID().uuidString.lowercased()
try await database.withClient { client in
    try await client.query(
        "INSERT INTO social.likes (user_id, photo_key) SELECT '\(unescaped: syncer)'::uuid, 'unsplash:sync-' || n FROM generate_series(1, 10000) n"
    )
}
let snapshot = try await database.withClient { client in
    try await client.query("SELECT pg_current_snapshot()::text").collect()[0].decode(String.self)
}
try await database.withClient { client in
    try await client.query(
        "DELETE FROM social.likes WHERE user_id = '\(unescaped: syncer)' AND photo_key IN (SELECT 'unsplash:sync-' || n FROM generate_series(1, 10) n)"
    )
    try await client.query(
        "INSERT INTO social.likes (user_id, photo_key) SELECT '\(unescaped: syncer)'::uuid, 'unsplash:new-' || n FROM generate_series(1, 10) n"
    )
}
let changedSQL = """
    SELECT photo_key, created_at, sync_xid::text FROM social.likes WHERE user_id = '\(syncer)'
      AND sync_xid >= pg_snapshot_xmin('\(snapshot)'::pg_snapshot) AND NOT pg_visible_in_snapshot(sync_xid, '\(snapshot)'::pg_snapshot)
    ORDER BY sync_xid, photo_key LIMIT 101
    """
let goneSQL = """
    SELECT key FROM social.sync_tombstones WHERE owner_id = '\(syncer)' AND list = 'likes'
      AND sync_xid >= pg_snapshot_xmin('\(snapshot)'::pg_snapshot) AND NOT pg_visible_in_snapshot(sync_xid, '\(snapshot)'::pg_snapshot) ORDER BY key
    """
let counted = try await database.withClient { client in
    (
        try await client.query(PostgresQuery(unsafeSQL: changedSQL)).collect().count,
        try await client.query(PostgresQuery(unsafeSQL: goneSQL)).collect().count
    )
}
precondition(counted == (10, 10), "the sync found \(counted) changed and gone, not 10 and 10")
let syncScript = FileManager.default.temporaryDirectory.appendingPathComponent("sync-\(getpid()).sql")
try
    (["BEGIN;", "SET LOCAL app.user_id = '\(syncer)';"]
    + Array(repeating: "EXPLAIN (ANALYZE, SUMMARY ON, TIMING OFF) \(changedSQL);\nEXPLAIN (ANALYZE, SUMMARY ON, TIMING OFF) \(goneSQL);", count: 100)
    + ["COMMIT;"]).joined(separator: "\n").write(to: syncScript, atomically: true, encoding: .utf8)
let syncPlans = try await ProcessCommand(
    postgresBin.appendingPathComponent("psql"),
    psqlArguments + ["-f", syncScript.path],
    environment: environment
)
.runToCompletion()
try? FileManager.default.removeItem(at: syncScript)
let executions = syncPlans.split(separator: "\n").compactMap { line -> Double? in
    guard let range = line.range(of: "Execution Time: ") else { return nil }
    return Double(line[range.upperBound...].split(separator: " ").first ?? "")
}
precondition(executions.count == 200, "read \(executions.count) execution times")
let syncTimes = stride(from: 0, to: executions.count, by: 2).map { executions[$0] + executions[$0 + 1] }.sorted()
func syncPercentile(_ q: Double) -> Double { syncTimes[min(syncTimes.count - 1, Int(Double(syncTimes.count - 1) * q))] }

// MARK: Report

note(
    """

    == social: the feed's first page (20 posts), \(posts) posts and \(likes) likes in the database ==
    wrk -t2 -c\(connections) -d\(seconds)s (wrk, the gateway, social and Postgres share 2 cores):
      through gateway     \(format(throughGateway.requestsPerSecond, 0)) req/s   p50 \(format(throughGateway.p50)) ms   p90 \(format(throughGateway.p90)) ms   p99 \(format(throughGateway.p99)) ms\(throughGateway.errors.map { "  \($0)" } ?? "")
      social directly     \(format(direct.requestsPerSecond, 0)) req/s   p50 \(format(direct.p50)) ms   p90 \(format(direct.p90)) ms   p99 \(format(direct.p99)) ms\(direct.errors.map { "  \($0)" } ?? "")
    baseline, the same query by hand (pgbench -M prepared -c\(connections) -j2 -T\(seconds), a transaction with the viewer set, as social's role):
      Postgres alone      \(format(database32.tps, 0)) tx/s    p50 \(format(database32.latency.percentile(50))) ms   p90 \(format(database32.latency.percentile(90))) ms   p99 \(format(database32.latency.percentile(99))) ms
    social's own statement (one statement, the viewer set in its first step), by pgbench the same way:
      social's statement     \(format(statement32.tps, 0)) tx/s    p50 \(format(statement32.latency.percentile(50))) ms   p90 \(format(statement32.latency.percentile(90))) ms   p99 \(format(statement32.latency.percentile(99))) ms
    goal: p99 through the gateway ≤ 20 ms

    == the same first page through the data API (\(restPath)) against /v1/feed, through the gateway, rounds alternating ==
    \(rounds.enumerated().map { index, round in
        "  round \(index + 1): /rest/v1 \(format(round.rest.requestsPerSecond, 0)) req/s p99 \(format(round.rest.p99)) ms\(round.rest.errors.map { " \($0)" } ?? "")   /v1/feed \(format(round.feed.requestsPerSecond, 0)) req/s p99 \(format(round.feed.p99)) ms   ratio of p99s \(format(round.rest.p99 / round.feed.p99))"
    }.joined(separator: "\n"))
    goal: /rest/v1's p99 ≤ 1.1 × /v1/feed's

    == SplashEdit's liked_photos (\(likedRestPath)) against /v1/likes?limit=20, through the gateway, rounds alternating ==
    \(likedRounds.enumerated().map { index, round in
        "  round \(index + 1): /rest/v1 \(format(round.rest.requestsPerSecond, 0)) req/s p99 \(format(round.rest.p99)) ms\(round.rest.errors.map { " \($0)" } ?? "")   /v1/likes \(format(round.typed.requestsPerSecond, 0)) req/s p99 \(format(round.typed.p99)) ms   ratio of p99s \(format(round.rest.p99 / round.typed.p99))"
    }.joined(separator: "\n"))
    goal: /rest/v1's p99 ≤ 1.1 × /v1/likes'

    == social: like toggles, 200 people on the newest 2,000 posts, through the gateway ==
    wrk -t2 -c\(connections) -d\(seconds)s: \(format(toggled.requestsPerSecond, 0)) toggles/s   p50 \(format(toggled.p50)) ms   p99 \(format(toggled.p99)) ms\(toggled.errors.map { "  \($0)" } ?? "")
      outbox events written meanwhile: \(eventsAfter - eventsBefore) (one per change: \(toggled.latency.count) toggles answered); likes held \(heldLikes) = \(likedEvents) liked − \(unlikedEvents) unliked events
    goal: ≥ 2,000 toggles/s, each with its event

    == a delta sync of 20 changes (10 liked, 10 unliked) among one person's 10,000 likes: server time of its two statements ==
      \(syncTimes.count) syncs: p50 \(format(syncPercentile(0.5), 3)) ms   p99 \(format(syncPercentile(0.99), 3)) ms   max \(format(syncTimes.last ?? 0, 3)) ms
    goal: ≤ 2 ms
    """
)

await gateway.stop()
await social.stop()
await catalog.stop()
try? FileManager.default.removeItem(at: blobs)
