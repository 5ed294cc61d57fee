import Foundation
import TestSupport
import Testing

@testable import Notify

@Suite("Devices and settings") struct DevicesTests {
    @Test func aDeviceIsRegisteredUpdatedListedMovedAndRemovedOnlyByItsOwner() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let alice = UUID()
            let bob = UUID()
            let token = NotifyHarness.newDeviceToken()
            // Upper-case hex is the same token, stored and answered lower-case.
            let registered = try await notify.call(
                .put,
                "/v1/devices/\(token.uppercased())",
                as: alice,
                json: #"{"platform":"ios","topic":"fi.splash.TrackBite","locale":"fi-FI"}"#
            )
            #expect(registered.status == 200, "\(registered.text)")
            let device = try registered.json()
            #expect(device["token"] as? String == token)
            #expect(device["environment"] as? String == "production")
            #expect(device["locale"] as? String == "fi-FI")

            // Registering again is an update.
            let again = try await notify.call(
                .put,
                "/v1/devices/\(token)",
                as: alice,
                json: #"{"platform":"ios","topic":"fi.splash.TrackBite","environment":"sandbox"}"#
            )
            #expect(again.status == 200)
            #expect(try again.json()["environment"] as? String == "sandbox")
            #expect(try again.json()["locale"] as? String == "en")
            let listed = try await notify.call(.get, "/v1/devices", as: alice)
            #expect((try listed.json()["devices"] as? [[String: Any]])?.map { $0["token"] as? String } == [token])

            // Bob cannot remove Alice's device; when his phone takes the token, it moves to him.
            #expect(try await notify.call(.delete, "/v1/devices/\(token)", as: bob).status == 404)
            try await notify.registerDevice(for: bob, token: token)
            #expect((try await notify.call(.get, "/v1/devices", as: alice).json()["devices"] as? [Any])?.isEmpty == true)
            #expect((try await notify.call(.get, "/v1/devices", as: bob).json()["devices"] as? [Any])?.count == 1)
            #expect(try await notify.call(.delete, "/v1/devices/\(token)", as: bob).status == 204)
            #expect((try await notify.call(.get, "/v1/devices", as: bob).json()["devices"] as? [Any])?.isEmpty == true)
            #expect(try await notify.call(.get, "/v1/devices", as: nil).status == 401)
        }
    }

    @Test func badTokensPlatformsAndBodiesAre422NamingTheField() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let user = UUID()
            let good = NotifyHarness.newDeviceToken()
            for bad in ["abc", String(repeating: "g", count: 64), good + "00", String(good.dropLast())] {
                let response = try await notify.call(.put, "/v1/devices/\(bad)", as: user, json: #"{"platform":"ios","topic":"fi.splash.App"}"#)
                #expect(response.status == 422, "\(bad): \(response.text)")
                #expect(response.text.contains("token"))
            }
            let cases: [(String, String)] = [
                (#"{"platform":"android","topic":"fi.splash.App"}"#, "platform"),
                (#"{"topic":"fi.splash.App"}"#, "platform"),
                (#"{"platform":"ios"}"#, "topic"),
                (#"{"platform":"ios","topic":"fi splash/App"}"#, "topic"),
                (#"{"platform":"ios","topic":"fi.splash.App","environment":"staging"}"#, "environment"),
                (#"{"platform":"ios","topic":"fi.splash.App","locale":"fi FI;drop"}"#, "locale"),
                (#"{"platform":7,"topic":"fi.splash.App"}"#, "platform"),
            ]
            for (body, field) in cases {
                let response = try await notify.call(.put, "/v1/devices/\(good)", as: user, json: body)
                #expect(response.status == 422, "\(body): \(response.text)")
                let errors = try response.json()["errors"] as? [[String: Any]] ?? []
                #expect(errors.contains { ($0["field"] as? String ?? $0["pointer"] as? String ?? "").contains(field) }, "\(body): \(response.text)")
            }
            #expect(try await notify.call(.put, "/v1/devices/\(good)", as: user, json: "[1,2]").status == 400)
            let huge = #"{"platform":"ios","topic":"fi.splash.App","pad":""# + String(repeating: "x", count: 20_000) + #""}"#
            #expect(try await notify.call(.put, "/v1/devices/\(good)", as: user, json: huge).status == 413)
            // Nothing was stored by any of them.
            #expect((try await notify.call(.get, "/v1/devices", as: user).json()["devices"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func settingsStartOnAndAPatchChangesOnlyWhatItNames() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let user = UUID()
            let fresh = try await notify.call(.get, "/v1/notification-settings", as: user).json()
            #expect(fresh["orders"] as? Bool == true && fresh["edits"] as? Bool == true && fresh["likes"] as? Bool == true)
            #expect((fresh["email"] as? [String: Any])?["receipts"] as? Bool == true)
            let changed = try await notify.call(.patch, "/v1/notification-settings", as: user, json: #"{"likes":false,"email":{"receipts":false}}"#)
            #expect(changed.status == 200, "\(changed.text)")
            let after = try await notify.call(.patch, "/v1/notification-settings", as: user, json: #"{"orders":false}"#).json()
            #expect(after["orders"] as? Bool == false && after["edits"] as? Bool == true && after["likes"] as? Bool == false)
            #expect((after["email"] as? [String: Any])?["receipts"] as? Bool == false)
            let bad = try await notify.call(.patch, "/v1/notification-settings", as: user, json: #"{"orders":"no","email":{"receipts":1}}"#)
            #expect(bad.status == 422)
            #expect(bad.text.contains("/orders") && bad.text.contains("/email/receipts"), "\(bad.text)")
            // Another user's settings are their own.
            #expect(try await notify.call(.get, "/v1/notification-settings", as: UUID()).json()["orders"] as? Bool == true)
        }
    }
}
