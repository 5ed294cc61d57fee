import Foundation
import LocalStack
import Synchronization
import TestSupport

/// All of Splash as processes on a `SystemStack`'s Postgres and cluster, the apps' way in: auth
/// (the stack's), photo-catalog (its fixture photos), edit-render (its API and a render worker),
/// social, tracking and a gateway in front of them all, with rate limits out of the way (a few
/// people make all the load); a restaurant with its kitchen's account, and three simulated
/// drivers on shift. Every service answers within 5 s (a request waiting for a Postgres that is
/// away is a 503 then); the gateway gives each 8 s to begin.
final class WholeStack: Sendable {
    let stack: SystemStack
    let catalog: ServiceProcess
    private let renderProcess: Mutex<ServiceProcess>
    private let renderDatabaseURL: String
    let social: ServiceProcess
    let tracking: ServiceProcess
    /// Started when asked for (`start(on:notify:)`), on its database.
    private let notifyProcess: Mutex<(process: ServiceProcess, databaseURL: String)?>
    let gateway: ServiceProcess
    let simulator: SimulatorProcess
    /// edit-render's files.
    let blobs: URL
    /// social's files.
    let socialBlobs: URL
    let kitchen: (id: String, token: String)
    let restaurant: String

    private init(
        stack: SystemStack,
        catalog: ServiceProcess,
        render: ServiceProcess,
        renderDatabaseURL: String,
        social: ServiceProcess,
        tracking: ServiceProcess,
        notify: (process: ServiceProcess, databaseURL: String)?,
        gateway: ServiceProcess,
        simulator: SimulatorProcess,
        blobs: URL,
        socialBlobs: URL,
        kitchen: (id: String, token: String),
        restaurant: String
    ) {
        renderProcess = Mutex(render)
        (self.stack, self.catalog, self.renderDatabaseURL) = (stack, catalog, renderDatabaseURL)
        notifyProcess = Mutex(notify)
        (self.social, self.tracking, self.gateway, self.simulator) = (social, tracking, gateway, simulator)
        (self.blobs, self.socialBlobs, self.kitchen, self.restaurant) = (blobs, socialBlobs, kitchen, restaurant)
    }

    static let deadline = ["HTTP_REQUEST_TIMEOUT": "5s"]
    /// edit-render's and notify's: a consumer group notices a dead member within 6 s.
    static let consumerSettings = deadline.merging(["KAFKA_SESSION_TIMEOUT": "6s"]) { _, new in new }

    /// The notify process now running, if the stack has one.
    var notify: ServiceProcess? { notifyProcess.withLock { $0?.process } }

    /// The edit-render process now running.
    var render: ServiceProcess { renderProcess.withLock { $0 } }

    /// - Parameter notify: whether notify runs too (behind the gateway).
    static func start(on stack: SystemStack, notify withNotify: Bool = false) async throws -> WholeStack {
        let database = stack.database
        let catalog = try await stack.startPhotoCatalog(settings: deadline)
        let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("system-render-\(UUID().uuidString.prefix(8))")
        let renderDatabaseURL = try await database.makeServiceRole(schema: "render", password: "system-render").url
        let render = try await stack.startEditRender(databaseURL: renderDatabaseURL, photoCatalog: catalog, blobs: blobs, settings: consumerSettings)
        let socialBlobs = FileManager.default.temporaryDirectory.appendingPathComponent("system-social-\(UUID().uuidString.prefix(8))")
        let social = try await stack.startSocial(
            databaseURL: try await database.makeServiceRole(schema: "social", password: "system-social").url,
            photoCatalog: catalog.baseURL,
            blobs: socialBlobs,
            settings: deadline
        )
        let tracking = try await stack.startTracking(
            databaseURL: try await database.makeServiceRole(schema: "tracking", password: "system-tracking").url,
            settings: deadline.merging(["TRACKING_DISPATCH_INTERVAL": "100ms"]) { _, new in new }
        )
        var notify: (process: ServiceProcess, databaseURL: String)?
        if withNotify {
            let url = try await database.makeServiceRole(schema: "notify", password: "system-notify").url
            notify = (try await stack.startNotify(databaseURL: url, settings: consumerSettings), url)
        }
        var gatewaySettings = [
            "GATEWAY_PHOTO_CATALOG_URL": catalog.baseURL, "GATEWAY_EDIT_RENDER_URL": render.baseURL,
            "GATEWAY_SOCIAL_URL": social.baseURL, "GATEWAY_TRACKING_URL": tracking.baseURL, "GATEWAY_UPSTREAM_TIMEOUT": "8s",
        ]
        if let notify { gatewaySettings["GATEWAY_NOTIFY_URL"] = notify.process.baseURL }
        for group in ["AUTH", "PHOTO_CATALOG", "EDIT_RENDER", "MEDIA", "SOCIAL", "STORAGE", "TRACKING", "DATA_AUTH", "DATA_SOCIAL", "DATA_TRACKING"] {
            gatewaySettings["GATEWAY_RATE_LIMIT_\(group)"] = "1000000/1m"
        }
        let gateway = try await stack.startGateway(settings: gatewaySettings)

        let (restaurant, kitchen) = try await stack.restaurant(at: gateway.baseURL)
        let simulator = try SimulatorProcess(
            gateway: gateway.baseURL,
            drivers: 3,
            speed: 20,
            interval: 0.5,
            seed: 11,
            serviceToken: SystemStack.serviceToken
        )
        try await waitUntilReady("three drivers on shift", timeout: .seconds(60)) {
            (try? await database.count("tracking.drivers", where: "on_shift AND lat IS NOT NULL")) == 3
        }
        return WholeStack(
            stack: stack,
            catalog: catalog,
            render: render,
            renderDatabaseURL: renderDatabaseURL,
            social: social,
            tracking: tracking,
            notify: notify,
            gateway: gateway,
            simulator: simulator,
            blobs: blobs,
            socialBlobs: socialBlobs,
            kitchen: kitchen,
            restaurant: restaurant
        )
    }

    /// SIGKILLs edit-render mid-work (its API, its worker, its relay) and starts it again on the
    /// same port: the calls in between are 503s from the gateway, the jobs it had go to the new
    /// worker once the group has noticed, what its relay had published but not marked goes again.
    func killAndRestartRender() async throws {
        let dead = render
        await dead.kill()
        let started = try await stack.startEditRender(
            databaseURL: renderDatabaseURL,
            photoCatalog: catalog,
            blobs: blobs,
            settings: Self.consumerSettings,
            port: dead.port
        )
        renderProcess.withLock { $0 = started }
    }

    /// SIGKILLs notify, and starts it again on the same port after `downtime`: what it had not
    /// consumed waits on Kafka meanwhile.
    func killAndRestartNotify(after downtime: Duration) async throws {
        guard let (dead, databaseURL) = notifyProcess.withLock({ $0 }) else { return }
        await dead.kill()
        try await Task.sleep(for: downtime)
        let started = try await stack.startNotify(databaseURL: databaseURL, settings: Self.consumerSettings, port: dead.port)
        notifyProcess.withLock { $0 = (started, databaseURL) }
    }

    /// Stops everything but the stack itself, front first.
    func stop() async {
        simulator.stop()
        for process in [gateway] + (notify.map { [$0] } ?? []) + [tracking, social, render, catalog] { await process.stop() }
        try? FileManager.default.removeItem(at: blobs)
        try? FileManager.default.removeItem(at: socialBlobs)
    }
}
