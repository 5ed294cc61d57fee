import Foundation
import HTTPTypes
import LocalStack
import TestSupport
import Testing

/// An edit from request to rendered file, through the API, the outbox, the test Kafka cluster and
/// a render worker, against a real Postgres.
@Suite("Edits end to end") struct EditLifecycleTests {
    @Test func anUploadedPhotoIsRenderedStoredAndServedThroughASignedURL() async throws {
        try await RenderHarness.with { render in
            let user = UUID()
            let photo = try RenderHarness.photo("Aqua")
            let uploaded = try await render.upload(photo, user: user)
            #expect(uploaded.status == 201)
            let upload = try uploaded.json()
            #expect((upload["width"] as? Int, upload["height"] as? Int, upload["format"] as? String) == (2560, 1600, "jpeg"))
            let uploadID = try #require(upload["uploadId"] as? String)
            // The original is kept as sent and served through its own signed link.
            let originalURL = try #require(upload["url"] as? String)
            #expect(originalURL.hasPrefix("https://splash.test/v1/media/\(user.uuidString.lowercased())/uploads/\(uploadID).jpeg?expires="))
            let kept = try await render.call(.get, String(originalURL.dropFirst("https://splash.test".count)), user: nil)
            #expect(kept.status == 200)
            #expect(Array(kept.body) == photo)

            let created = try await render.createEdit(
                #"{"source":{"uploadId":"\#(uploadID)"},"filters":[{"name":"sepia","intensity":0.8},{"name":"vignette","intensity":0.5}]}"#,
                user: user
            )
            #expect(created.status == 202)
            let id = try #require(try created.json()["id"] as? String)
            #expect(try created.json()["status"] as? String == "queued")

            let edit = try await render.finished(id, user: user)
            #expect(edit["status"] as? String == "completed")
            let original = try #require(edit["original"] as? [String: Any])
            #expect(original["uploadId"] as? String == uploadID)
            #expect((original["width"] as? Int, original["height"] as? Int, original["bytes"] as? Int) == (2560, 1600, photo.count))
            let originalFromEdit = try await render.call(
                .get,
                String(try #require(original["url"] as? String).dropFirst("https://splash.test".count)),
                user: nil
            )
            #expect(Array(originalFromEdit.body) == photo)
            let result = try #require(edit["result"] as? [String: Any])
            #expect((result["width"] as? Int, result["height"] as? Int) == (1080, 675))
            #expect((result["bytes"] as? Int ?? 0) <= 1 << 20)
            let url = try #require(result["url"] as? String)
            #expect(url.hasPrefix("https://splash.test/v1/media/\(user.uuidString.lowercased())/\(id)/edited.jpg?expires="))

            // The signed URL serves the JPEG, to anyone holding it, until it expires.
            let media = try await render.call(.get, String(url.dropFirst("https://splash.test".count)), user: nil)
            #expect(media.status == 200)
            #expect(media.headers["content-type"] == "image/jpeg")
            #expect(media.body.count == result["bytes"] as? Int)
            #expect(Array(media.body.prefix(3)) == [0xFF, 0xD8, 0xFF])

            // The result event went out through the outbox with the edit's figures.
            #expect(try await render.count("outbox", where: "type = 'render.edit.requested.v1'") == 1)
            #expect(
                try await render.count(
                    "outbox",
                    where: "type = 'render.edit.completed.v1' AND lower(convert_from(payload, 'UTF8')::jsonb ->> 'editId') = '\(id)'"
                ) == 1
            )
        }
    }

    @Test func anUnsplashPhotoIsFetchedThroughTheCatalogKeptAsAReferenceAndItsUseReported() async throws {
        try await RenderHarness.with { render in
            let user = UUID()
            let created = try await render.createEdit(
                #"{"source":{"unsplashPhotoId":"Storm-abc"},"filters":[{"name":"noir"}],"output":{"longestEdge":800}}"#,
                user: user
            )
            let id = try #require(try created.json()["id"] as? String)
            let edit = try await render.finished(id, user: user)
            #expect(edit["status"] as? String == "completed")
            #expect((edit["source"] as? [String: Any])?["unsplashPhotoId"] as? String == "Storm-abc")
            // The original is the photo's reference: its id and the URLs photo-catalog gave.
            let original = try #require(edit["original"] as? [String: Any])
            #expect(original["unsplashPhotoId"] as? String == "Storm-abc")
            #expect(((original["urls"] as? [String: String])?["regular"])?.hasSuffix("/images/Storm.jpg?regular") == true, "\(original)")
            #expect(original["url"] == nil)
            let result = try #require(edit["result"] as? [String: Any])
            #expect((result["width"] as? Int, result["height"] as? Int) == (800, 533))
            // Only the edited image is stored; the Unsplash original stays a reference.
            let files = try FileManager.default.subpathsOfDirectory(atPath: render.blobs.path).filter { !$0.hasSuffix("/") && $0.contains(".") }
            #expect(files == ["\(user.uuidString.lowercased())/\(id)/edited.jpg"])
            try await waitUntilReady("the download report", timeout: .seconds(10)) {
                render.catalog.reports == ["Storm-abc \(user.uuidString.lowercased())"]
            }
        }
    }

    @Test func badSourcesEndAsFailedEditsWithAReasonAndTheWorkerCarriesOn() async throws {
        try await RenderHarness.with { render in
            let user = UUID()
            let cases = [
                ("elsewhere-1", "not one of them"),
                ("missing-1", "has no photo"),
                ("Broken-1", "damaged or incomplete"),
            ]
            var ids: [(String, String)] = []
            for (photo, reason) in cases {
                let created = try await render.createEdit(#"{"source":{"unsplashPhotoId":"\#(photo)"},"filters":[]}"#, user: user)
                ids.append((try #require(try created.json()["id"] as? String), reason))
            }
            for (id, reason) in ids {
                let edit = try await render.finished(id, user: user)
                #expect(edit["status"] as? String == "failed")
                #expect((edit["failureReason"] as? String)?.contains(reason) == true, "\(edit["failureReason"] ?? "none")")
            }
            #expect(try await render.count("outbox", where: "type = 'render.edit.failed.v1'") == 3)
            // The worker is not stuck: a good edit after the bad ones completes.
            let good = try await render.createEdit(#"{"source":{"unsplashPhotoId":"FreshFlower-1"},"filters":[{"name":"invert"}]}"#, user: user)
            #expect(try await render.finished(try #require(try good.json()["id"] as? String), user: user)["status"] as? String == "completed")
        }
    }

    @Test func twoWorkersShareTheJobsAndWhenOneStopsTheOtherFinishesEveryJobOnce() async throws {
        try await RenderHarness.with(["RENDER_WORKERS": "1"], replicas: 2) { render in
            let user = UUID()
            let total = 40
            for index in 0..<total {
                let created = try await render.createEdit(
                    #"{"source":{"unsplashPhotoId":"FreshFlower-\#(index)"},"filters":[{"name":"sepia"}],"output":{"longestEdge":200}}"#,
                    user: user
                )
                #expect(created.status == 202)
            }
            try await waitUntilReady("the first completed edits", timeout: .seconds(60)) {
                (try? await render.count("edits", where: "status = 'completed'")) ?? 0 >= 4
            }
            // Both workers take part: each is assigned its share of render.jobs (the second may
            // join after the first has started).
            try await waitUntilReady("both replicas assigned partitions", timeout: .seconds(60)) {
                render.logs.text.components(separatedBy: "\n").count { $0.contains("Kafka partitions assigned") && $0.contains("render.jobs") } >= 2
            }
            // One worker goes away mid-run; its partitions move to the other, which finishes.
            await render.apps[1].beginShutdown()
            try await waitUntilReady("\(total) completed edits", timeout: .seconds(120)) {
                (try? await render.count("edits", where: "status = 'completed'")) == total
            }
            #expect(try await render.count("outbox", where: "type = 'render.edit.completed.v1'") == total)
            #expect(try await render.count("edits", where: "status <> 'completed'") == 0)
        }
    }
}
