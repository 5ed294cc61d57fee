import Foundation
import ServiceKit

/// Everything `gateway` reads from its environment; each variable is described in
/// Services/Gateway/README.md, under "Configuration".
struct GatewayConfiguration: ServiceConfiguration {
    var http: HTTPServerSettings
    var routes: RouteTable
    /// auth's URL (`GATEWAY_AUTH_URL`, required: without auth's keys no token can be verified).
    var authURL: URL
    /// Where auth publishes its verification keys.
    var keySetURL: URL
    /// The `iss` every access token must carry (auth's `AUTH_JWT_ISSUER`).
    var issuer: String
    /// The shortest time between two key-set fetches caused by unknown key ids.
    var keySetRefreshInterval: Duration
    var connectTimeout: Duration
    var trustedProxies: [IPRange]
    var cors: CORSPolicy
    var realtime: RealtimeSettings
    /// The anon key Supabase clients must send as `apikey` to `/rest/v1` and `/storage/v1`; `nil`
    /// (the local stack) accepts any.
    var anonKey: String?

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        http = try HTTPServerSettings(from: reader, defaultPort: 8080)
        let upstreamTimeout = try reader.duration("GATEWAY_UPSTREAM_TIMEOUT", default: .seconds(30), minimum: .milliseconds(100))
        let authURL = try reader.url("GATEWAY_AUTH_URL", schemes: ["http", "https"])
        self.authURL = authURL
        var groups: [RouteGroup] = []
        for entry in RouteTable.catalog {
            let upper = entry.name.uppercased()
            let upstream: URL? =
                entry.variable == "GATEWAY_AUTH_URL"
                ? authURL
                : reader.raw(entry.variable) != nil ? try reader.url(entry.variable, schemes: ["http", "https"]) : nil
            groups.append(
                RouteGroup(
                    name: entry.name,
                    pathPrefixes: entry.prefixes,
                    upstream: upstream,
                    access: entry.access,
                    rateLimit: try reader.rateLimit("GATEWAY_RATE_LIMIT_\(upper)", default: entry.rateLimit),
                    maxBodySize: try reader.byteCount("GATEWAY_MAX_BODY_\(upper)", default: entry.maxBodySize, in: 0...(1 << 30)),
                    timeout: try reader.duration("GATEWAY_TIMEOUT_\(upper)", default: upstreamTimeout, minimum: .milliseconds(100))
                )
            )
        }
        routes = RouteTable(groups: groups)
        keySetURL = try reader.url(
            "GATEWAY_JWKS_URL",
            schemes: ["http", "https"],
            default: authURL.appendingPathComponent("auth/v1/.well-known/jwks.json")
        )
        issuer = try reader.string("GATEWAY_JWT_ISSUER", default: "http://localhost:8080/auth/v1")
        keySetRefreshInterval = try reader.duration("GATEWAY_JWKS_REFRESH_INTERVAL", default: .seconds(5), minimum: .milliseconds(100))
        connectTimeout = try reader.duration("GATEWAY_CONNECT_TIMEOUT", default: .seconds(1), minimum: .milliseconds(10))
        anonKey = try reader.optionalSecret("GATEWAY_ANON_KEY", expected: "the anon key clients send as apikey")
        trustedProxies = try reader.ipRanges("GATEWAY_TRUSTED_PROXIES")
        cors = try CORSPolicy(
            origins: reader.value(
                "GATEWAY_CORS_ORIGINS",
                expected: "* or a comma-separated list of origins such as https://app.example.com",
                default: [],
                parse: CORSPolicy.parseOrigins
            ),
            maxAge: reader.duration("GATEWAY_CORS_MAX_AGE", default: .seconds(600))
        )
        realtime = try RealtimeSettings(from: reader)
    }
}
