import Foundation
import Hummingbird
import KeySetClient
import ResourceAPI
import ServiceKit

/// `/v1/devices`: the caller's iPhones that take push notifications.
struct DevicesController: Sendable {
    let devices: DeviceStore
    let keys: KeySetCache

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("devices", use: list)
            .put("devices/:token", use: register)
            .delete("devices/:token", use: unregister)
    }

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        return try JSONBody.response(.ok, DeviceList(devices: try await devices.devices(of: caller.id).map(DeviceBody.init)))
    }

    @Sendable func register(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let token = try Self.token(context)
        var request = request
        let registration = try await request.decodeBody(as: DeviceRegistration.self, context: context)
        let device = try await devices.register(
            token,
            user: caller.id,
            platform: registration.platform,
            topic: registration.topic,
            environment: registration.environment,
            locale: registration.locale
        )
        return try JSONBody.response(.ok, DeviceBody(device))
    }

    @Sendable func unregister(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        try await devices.unregister(try Self.token(context), user: caller.id)
        return Response(status: .noContent)
    }

    /// The path's device token, lower-case.
    /// - Throws: 422 naming `token` when it is not 64 hex digits.
    static func token(_ context: AppRequestContext) throws -> String {
        let token = (context.parameters.get("token") ?? "").lowercased()
        guard token.utf8.count == 64, token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw Problem.validation([FieldError(.parameter("token"), "token must be an APNs device token: 64 hexadecimal digits")])
        }
        return token
    }
}

/// `/v1/notification-settings`: what the caller wants to hear of.
struct SettingsController: Sendable {
    let devices: DeviceStore
    let keys: KeySetCache

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("notification-settings", use: show)
            .patch("notification-settings", use: change)
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        return try JSONBody.response(.ok, SettingsBody(try await devices.settings(of: caller.id)))
    }

    @Sendable func change(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        var request = request
        let change = try await request.decodeBody(as: SettingsChange.self, context: context)
        return try JSONBody.response(.ok, SettingsBody(try await devices.changeSettings(of: caller.id, change)))
    }
}
