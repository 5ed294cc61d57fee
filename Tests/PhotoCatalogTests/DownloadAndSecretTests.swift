import Foundation
import TestSupport
import Testing

@testable import PhotoCatalog

/// Download tracking, and the access key staying on the server.
@Suite("photo-catalog download tracking and key secrecy")
struct DownloadAndSecretTests {
    @Test func aDownloadIsReportedOncePerUserPhotoAndDayAndTheCallerNeverWaits() async throws {
        try await CatalogHarness.with { catalog in
            let ana = try catalog.token()
            let ben = try catalog.token()
            catalog.unsplash.set(delay: .seconds(3))
            let started = ContinuousClock.now
            let first = try await catalog.reportDownload("LBI7cgq3pbM", bearer: ana)
            #expect(ContinuousClock.now - started < .milliseconds(1_500), "the caller waited for Unsplash")
            #expect(first.status == 202, "\(first.text)")
            #expect(try first.json()["queued"] as? Bool == true)
            let again = try await catalog.reportDownload("LBI7cgq3pbM", bearer: ana)
            #expect(try again.json()["queued"] as? Bool == false)
            #expect(try await catalog.reportDownload("LBI7cgq3pbM", bearer: ben).status == 202)
            catalog.unsplash.set(delay: .zero)

            try await catalog.eventually("both reports") { catalog.unsplash.downloads.count == 2 }
            try await Task.sleep(for: .milliseconds(300))
            #expect(catalog.unsplash.downloads == ["LBI7cgq3pbM", "LBI7cgq3pbM"])
            // The location Unsplash gave, query string kept, with the key.
            #expect(catalog.unsplash.calls.contains("/photos/LBI7cgq3pbM/download?ixid=fake"), "\(catalog.unsplash.calls)")
            #expect(try await catalog.count("downloads", where: "state = 'reported'") == 2)
        }
    }

    @Test func aFailedReportIsRetriedUntilUnsplashTakesIt() async throws {
        try await CatalogHarness.with { catalog in
            _ = try await catalog.get("/v1/photos/RetryMe")
            catalog.unsplash.set(mode: .failing)
            #expect(try await catalog.reportDownload("RetryMe", bearer: try catalog.token()).status == 202)
            try await catalog.eventually("a failed attempt") { try await catalog.count("downloads", where: "attempts >= 2") == 1 }
            catalog.unsplash.set(mode: .normal)
            try await catalog.eventually("the report") { catalog.unsplash.downloads == ["RetryMe"] }
            try await catalog.eventually("the row marked reported") { try await catalog.count("downloads", where: "state = 'reported'") == 1 }
        }
    }

    @Test func reportingNeedsAUserOrTheServiceToken() async throws {
        let serviceToken = String(repeating: "s", count: 40)
        try await CatalogHarness.with(["CATALOG_SERVICE_TOKEN": serviceToken]) { catalog in
            let anonymous = try await catalog.reportDownload("abc", bearer: nil)
            #expect(anonymous.status == 401)
            #expect(try await catalog.reportDownload("abc", bearer: "forged.token.here").status == 401)
            #expect(try await catalog.reportDownload("abc", bearer: try catalog.token(expiresIn: -60)).status == 401)
            let wrongSecret = try await catalog.reportDownload(
                "abc",
                bearer: nil,
                headers: [("X-Splash-Service-Token", String(repeating: "x", count: 40)), ("X-Splash-User-Id", UUID().uuidString)]
            )
            #expect(wrongSecret.status == 401)
            let noUser = try await catalog.reportDownload("abc", bearer: nil, headers: [("X-Splash-Service-Token", serviceToken)])
            #expect(noUser.status == 422)
            let service = try await catalog.reportDownload(
                "abc",
                bearer: nil,
                headers: [("X-Splash-Service-Token", serviceToken), ("X-Splash-User-Id", UUID().uuidString)]
            )
            #expect(service.status == 202, "\(service.text)")
            #expect(try await catalog.count("downloads") == 1)
        }
    }

    @Test func theAccessKeyAppearsInNoResponseHeaderOrLogLine() async throws {
        try await CatalogHarness.with(["UNSPLASH_TIMEOUT": "300ms"]) { catalog in
            var seen: [TestResponse] = []
            seen.append(try await catalog.get("/v1/photos"))
            seen.append(try await catalog.get("/v1/search/photos?query=secret"))
            seen.append(try await catalog.get("/v1/photos/missing-x"))
            seen.append(try await catalog.get("/v1/photos/random?count=2"))
            for mode in [FakeUnsplash.Mode.failing, .rateLimited429, .rateLimited403] {
                catalog.unsplash.set(mode: mode)
                seen.append(try await catalog.get("/v1/search/photos?query=\(mode)"))
            }
            catalog.unsplash.set(mode: .normal)
            catalog.unsplash.set(delay: .seconds(1))
            seen.append(try await catalog.get("/v1/search/photos?query=timeout"))
            catalog.unsplash.set(delay: .zero)
            // The rate limits above spent the budget until its window ends; start a new one.
            try await catalog.database.withClient { client in
                try await client.query("UPDATE catalog.budget SET remaining = NULL, resets_at = NULL")
            }
            seen.append(try await catalog.reportDownload("KeyTest", bearer: try catalog.token()))
            seen.append(try await catalog.get("/metrics"))
            // Unsplash answers within 300 ms here or the report is tried again with backoff: on a
            // loaded machine (the full suite in parallel) that took more than 10 s once.
            try await catalog.eventually("the download report", timeout: .seconds(40)) { catalog.unsplash.downloads.count == 1 }

            #expect(catalog.unsplash.authorizations == ["Client-ID \(FakeUnsplash.accessKey)"])
            for response in seen {
                #expect(!response.text.contains(FakeUnsplash.accessKey))
                #expect(!response.headers.values.contains { $0.contains(FakeUnsplash.accessKey) })
            }
            let logs = catalog.logs.text
            #expect(!logs.isEmpty)
            #expect(!logs.contains(FakeUnsplash.accessKey))
            #expect(!logs.contains("Client-ID"))
        }
    }
}
