import Foundation
import HTTPTypes
import Hummingbird
import Identity
import KeySetClient
import Logging
import NIOCore
import ServiceKit

/// `/v1/realtime` and `/realtime/v1/websocket` (WebSockets, opened by `RealtimeUpgrade` at the
/// edge) and `/v1/events` (SSE): who may connect, and the SSE stream.
struct RealtimeController: Sendable {
    let hub: RealtimeHub
    /// Supabase Realtime's clients (`/realtime/v1/websocket`).
    let changes: ChangeHub
    let broadcasts: BroadcastRelay
    let presence: PresenceRelay
    /// `GATEWAY_ANON_KEY`: the `apikey` Supabase clients must send (any when unset).
    let anonKey: String?
    let gate: RealtimeGate
    let settings: RealtimeSettings
    let addresses: ClientAddressResolver
    let limiter: RateLimiter
    let logger: Logger

    init(
        hub: RealtimeHub,
        changes: ChangeHub,
        broadcasts: BroadcastRelay,
        presence: PresenceRelay,
        anonKey: String?,
        gate: RealtimeGate,
        settings: RealtimeSettings,
        addresses: ClientAddressResolver,
        logger: Logger
    ) {
        self.hub = hub
        self.changes = changes
        self.broadcasts = broadcasts
        self.presence = presence
        self.anonKey = anonKey
        self.gate = gate
        self.settings = settings
        self.addresses = addresses
        self.limiter = RateLimiter(settings.connectRateLimit)
        self.logger = logger
    }

    // MARK: Admission

    /// Checks an SSE connection: its access token, the caller's connect rate and the gateway's
    /// capacity.
    func admit(_ headers: HTTPFields, peer: SocketAddress?) async throws(Problem) -> Viewer {
        guard let token = headers.bearerToken else { throw TokenProblem.missing }
        let viewer: Viewer
        do {
            viewer = try await gate.viewer(token: token)
        } catch {
            throw TokenProblem.refused(error)
        }
        try room(for: "user:\(viewer.user)")
        return viewer
    }

    /// Takes a token from `caller`'s connect bucket and checks that the gateway has room for
    /// another connection.
    func room(for caller: String) throws(Problem) {
        let decision = limiter.take(caller)
        guard decision.allowed else {
            throw GatewayProblem.rateLimited(
                decision,
                limit: limiter.limit,
                title: "Too many connection attempts",
                detail:
                    "At most \(limiter.limit.count) realtime connections per \(DurationFormat.format(limiter.limit.window)); reconnect with a backoff."
            )
        }
        guard hub.openConnections + changes.openConnections < settings.maxConnections else {
            throw Problem(
                status: .serviceUnavailable,
                type: "realtime-full",
                title: "Too many realtime connections",
                detail: "This gateway holds as many realtime connections as it may; retry shortly.",
                headers: [.retryAfter: "5"]
            )
        }
    }

    /// Caps the kernel's send buffer of a realtime connection at `GATEWAY_REALTIME_SOCKET_BUFFER`.
    /// Left to itself, Linux grows it to megabytes, which a client that stops reading fills before
    /// its queue does: it would be found slow only after that many events, and every such client
    /// would hold that much memory.
    func capSendBuffer(of channel: any Channel) async {
        try? await channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(settings.socketBuffer)).get()
    }

    // MARK: Routes

    func addRoutes(to router: Router<AppRequestContext>) {
        // The two WebSocket endpoints reached by GETs without an upgrade.
        router.get("/v1/realtime", use: realtimeWithoutUpgrade)
            .get("/realtime/v1/websocket", use: supabaseRealtimeWithoutUpgrade)
            .get("/v1/events", use: events)
    }

    @Sendable func realtimeWithoutUpgrade(_ request: Request, context: AppRequestContext) async throws -> Response {
        throw Problem(
            status: .upgradeRequired,
            type: "websocket-required",
            title: "WebSocket required",
            detail: "Open /v1/realtime with a WebSocket upgrade, or use SSE at /v1/events.",
            headers: [.upgrade: "websocket", .connection: "Upgrade"]
        )
    }

    @Sendable func supabaseRealtimeWithoutUpgrade(_ request: Request, context: AppRequestContext) async throws -> Response {
        throw Problem(
            status: .upgradeRequired,
            type: "websocket-required",
            title: "WebSocket required",
            detail: "Open /realtime/v1/websocket?apikey=…&vsn=1.0.0 with a WebSocket upgrade, as Supabase's realtime clients do.",
            headers: [.upgrade: "websocket", .connection: "Upgrade"]
        )
    }

    /// `GET /v1/events?channels=…`: a Server-Sent Events stream of the channels' events.
    @Sendable func events(_ request: Request, context: AppRequestContext) async throws -> Response {
        let viewer = try await admit(request.headers, peer: context.remoteAddress)
        let channels: Set<RealtimeChannel>
        switch await gate.channels(request.uri.queryParameters["channels"].map(String.init), for: viewer) {
        case .success(let requested) where !requested.isEmpty:
            channels = requested
        case .success:
            throw Problem(
                status: .unprocessableContent,
                type: "no-channels",
                title: "No channels",
                detail: "Name the channels to follow: /v1/events?channels=profiles,me,orders:{order id}."
            )
        case .failure(let refusal):
            throw Problem(
                status: refusal.code == "forbidden" ? .forbidden : .unprocessableContent,
                type: refusal.code == "forbidden" ? "channel-forbidden" : "unknown-channel",
                title: refusal.code == "forbidden" ? "Channel forbidden" : "Unknown channel",
                detail: refusal.message
            )
        }
        return await stream(channels, to: viewer, lastEventID: request.headers[.lastEventID], context: context)
    }

    /// The SSE stream of `channels` (already decided) for `viewer`, resuming after `lastEventID`.
    func stream<Context: ServiceRequestContext>(
        _ channels: Set<RealtimeChannel>,
        to viewer: Viewer,
        lastEventID: String?,
        context: Context
    ) async -> Response {
        await capSendBuffer(of: context.channel)
        let client = hub.connect(transport: .sse, queueCapacity: settings.clientBuffer, connection: context.channel)
        let resumption = hub.subscribe(client, to: channels, resumingAfter: lastEventID)
        let stream = ServerSentEventStream(hub: hub, client: client, viewer: viewer, heartbeat: settings.heartbeat, sessions: gate.sessions)
        var headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        headers[.xAccelBuffering] = "no"
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                try await stream.write(to: &writer, resumption: resumption, lastEventID: lastEventID)
            }
        )
    }
}

extension HTTPField.Name {
    static let apikey = Self("apikey")!
    static let lastEventID = Self("Last-Event-ID")!
    static let xAccelBuffering = Self("X-Accel-Buffering")!
}
