import Foundation
import HTTPTypes
import Imaging
import LocalStack
import TestSupport
import Testing

/// The edit API's contract with the apps: validation, idempotency, ownership, media links.
@Suite("Edit API") struct EditAPITests {
    @Test func theFilterCatalogListsEveryFilterWithItsParameters() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let response = try await render.call(.get, "/v1/filters", user: nil)
            #expect(response.status == 200)
            let filters = try #require(try response.json()["filters"] as? [[String: Any]])
            #expect(filters.count == 18)
            let sepia = try #require(filters.first { $0["name"] as? String == "sepia" })
            #expect(sepia["coreImageName"] as? String == "CISepiaTone")
            let intensity = try #require((sepia["parameters"] as? [[String: Any]])?.first)
            #expect(
                (intensity["name"] as? String, intensity["default"] as? Double, intensity["minimum"] as? Double, intensity["maximum"] as? Double) == (
                    "intensity", 1, 0, 1
                )
            )
        }
    }

    @Test func unknownFiltersAndOutOfRangeParametersGet422NamingTheField() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let user = UUID()
            let unknown = try await render.createEdit(
                #"{"source":{"unsplashPhotoId":"Aqua-1"},"filters":[{"name":"sepia"},{"name":"sparkle"}]}"#,
                user: user
            )
            #expect(unknown.status == 422)
            #expect(unknown.headers["content-type"] == "application/problem+json")
            #expect(unknown.text.contains("filters[1].name") && unknown.text.contains("sparkle"))
            let range = try await render.createEdit(
                #"{"source":{"unsplashPhotoId":"Aqua-1"},"filters":[{"name":"vignette","intensity":3}]}"#,
                user: user
            )
            #expect(range.status == 422)
            #expect(range.text.contains("filters[0].intensity"))
            let edge = try await render.createEdit(#"{"source":{"unsplashPhotoId":"Aqua-1"},"filters":[],"output":{"longestEdge":4096}}"#, user: user)
            #expect(edge.status == 422 && edge.text.contains("longestEdge"))
            let noKey = try await render.call(.post, "/v1/edits", user: user, json: #"{"source":{"unsplashPhotoId":"Aqua-1"},"filters":[]}"#)
            #expect(noKey.status == 422 && noKey.text.contains("Idempotency-Key"))
            let garbage = try await render.createEdit("{not json", user: user)
            #expect(garbage.status == 422)
            let anonymous = try await render.call(.post, "/v1/edits", user: nil, headers: [("Idempotency-Key", "k")], json: "{}")
            #expect(anonymous.status == 401)
            #expect(try await render.count("edits") == 0)
        }
    }

    @Test func theSameIdempotencyKeyReturnsTheSameEditAndADifferentBodyIsRefused() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let user = UUID()
            let body = #"{"source":{"unsplashPhotoId":"Aqua-1"},"filters":[{"name":"fade"}]}"#
            let first = try await render.createEdit(body, user: user, key: "retry-me")
            let second = try await render.createEdit(body, user: user, key: "retry-me")
            #expect(first.status == 202 && second.status == 202)
            #expect(try first.json()["id"] as? String == second.json()["id"] as? String)
            #expect(second.headers["idempotent-replayed"] == "true")
            let other = try await render.createEdit(#"{"source":{"unsplashPhotoId":"Aqua-2"},"filters":[]}"#, user: user, key: "retry-me")
            #expect(other.status == 422 && other.text.contains("idempotency-key-reused"))
            // Keys are per user: somebody else's same key is a new edit.
            let stranger = try await render.createEdit(body, user: UUID(), key: "retry-me")
            #expect(try stranger.json()["id"] as? String != first.json()["id"] as? String)
            #expect(try await render.count("edits") == 2)
            #expect(try await render.count("outbox", where: "type = 'render.edit.requested.v1'") == 2)
        }
    }

    @Test func nobodyReadsListsOrDeletesAnotherUsersEditsOrUploads() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let (alice, mallory) = (UUID(), UUID())
            let created = try await render.createEdit(#"{"source":{"unsplashPhotoId":"Aqua-1"},"filters":[]}"#, user: alice)
            let id = try #require(try created.json()["id"] as? String)
            #expect(try await render.call(.get, "/v1/edits/\(id)", user: mallory).status == 404)
            #expect(try await render.call(.delete, "/v1/edits/\(id)", user: mallory).status == 404)
            let listed = try await render.call(.get, "/v1/edits", user: mallory)
            #expect((try listed.json()["edits"] as? [Any])?.isEmpty == true)
            let upload = try await render.upload(try RenderHarness.photo("FreshFlower"), user: alice)
            let uploadID = try #require(try upload.json()["uploadId"] as? String)
            let borrowed = try await render.createEdit(#"{"source":{"uploadId":"\#(uploadID)"},"filters":[]}"#, user: mallory)
            #expect(borrowed.status == 422)
            // Alice still has hers, and can delete it.
            #expect(try await render.call(.get, "/v1/edits/\(id)", user: alice).status == 200)
            #expect(try await render.call(.delete, "/v1/edits/\(id)", user: alice).status == 204)
            #expect(try await render.call(.get, "/v1/edits/\(id)", user: alice).status == 404)
        }
    }

    @Test func editsAreListedNewestFirstPageByPage() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let user = UUID()
            var ids: [String] = []
            for index in 0..<5 {
                let created = try await render.createEdit(#"{"source":{"unsplashPhotoId":"Aqua-\#(index)"},"filters":[]}"#, user: user)
                ids.append(try #require(try created.json()["id"] as? String))
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await render.call(.get, "/v1/edits?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), user: user)
                let json = try page.json()
                seen += (json["edits"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                cursor = json["nextCursor"] as? String
            } while cursor != nil
            #expect(seen == ids.reversed())
            #expect(try await render.call(.get, "/v1/edits?limit=0", user: user).status == 422)
            #expect(try await render.call(.get, "/v1/edits?cursor=nonsense", user: user).status == 422)
        }
    }

    /// A phone offline while the other deletes one edit and makes another gets exactly those on
    /// its next sync (the list keeps its `edits` name beside the shared `items`).
    @Test func anOfflinePhoneSyncsExactlyTheEditsMadeAndDeleted() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let user = UUID()
            var ids: [String] = []
            for index in 0..<3 {
                let created = try await render.createEdit(#"{"source":{"unsplashPhotoId":"Sync-\#(index)"},"filters":[]}"#, user: user)
                ids.append(try #require(try created.json()["id"] as? String))
            }
            let first = try await render.call(.get, "/v1/edits", user: user).json()
            #expect((first["items"] as? [[String: Any]])?.count == 3 && (first["edits"] as? [[String: Any]])?.count == 3)
            let token = try #require(first["syncToken"] as? String)
            #expect(try await render.call(.delete, "/v1/edits/\(ids[0])", user: user).status == 204)
            let made = try await render.createEdit(#"{"source":{"unsplashPhotoId":"Sync-9"},"filters":[]}"#, user: user)
            let madeID = try #require(try made.json()["id"] as? String)
            let synced = try await render.call(.get, "/v1/edits?since=\(token)", user: user).json()
            #expect((synced["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [madeID])
            #expect(synced["deleted"] as? [String] == [ids[0]])
            let quiet = try await render.call(.get, "/v1/edits?since=\(try #require(synced["syncToken"] as? String))", user: user).json()
            #expect((quiet["items"] as? [Any])?.isEmpty == true && (quiet["deleted"] as? [Any])?.isEmpty == true)
            #expect(try await render.call(.get, "/v1/edits?since=\(token)", user: UUID()).status == 422)
        }
    }

    @Test func uploadsAreCheckedFromTheirHeader() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api", "RENDER_MAX_UPLOAD": "2MiB"]) { render in
            let user = UUID()
            let gif = try await render.upload(Array("GIF89a\u{1}\u{0}\u{1}\u{0}".utf8) + [UInt8](repeating: 0, count: 64), user: user)
            #expect(gif.status == 422 && gif.text.contains("a GIF"))
            let svg = try await render.upload(Array(#"<svg xmlns="http://www.w3.org/2000/svg"/>"#.utf8), user: user)
            #expect(svg.status == 422 && svg.text.contains("SVG"))
            let large = try await render.upload(try RenderHarness.photo("Storm") + [UInt8](repeating: 0, count: 2 << 20), user: user)
            #expect(large.status == 413)
            #expect(try await render.count("uploads") == 0)
            let files = try FileManager.default.subpathsOfDirectory(atPath: render.blobs.path).filter { $0.contains(".") }
            #expect(files.isEmpty, "\(files)")
        }
    }

    @Test func anUploadRetriedWithItsIdempotencyKeyIsStoredOnce() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let (user, other) = (UUID(), UUID())
            let flower = try RenderHarness.photo("FreshFlower")
            let upload = { (bytes: [UInt8], user: UUID, key: String?) in
                try await render.call(
                    .post,
                    "/v1/uploads",
                    user: user,
                    headers: [("Content-Type", "image/jpeg")] + (key.map { [("Idempotency-Key", $0)] } ?? []),
                    bytes: bytes
                )
            }
            let first = try await upload(flower, user, "photo-1")
            #expect(first.status == 201 && first.headers["idempotent-replayed"] == nil)
            let retry = try await upload(flower, user, "photo-1")
            #expect(retry.status == 201 && retry.headers["idempotent-replayed"] == "true")
            let id = try #require(try first.json()["uploadId"] as? String)
            #expect(try retry.json()["uploadId"] as? String == id)
            #expect(try retry.json()["width"] as? Int == first.json()["width"] as? Int)
            // The same key with other bytes is refused; another user's key is theirs; no key is
            // a new upload each time.
            let storm = try await upload(try RenderHarness.photo("Storm"), user, "photo-1")
            #expect(storm.status == 422 && storm.text.contains("idempotency-key-reused"))
            #expect(try await upload(flower, other, "photo-1").status == 201)
            #expect(try await upload(flower, user, nil).status == 201)
            #expect(try await upload(flower, user, nil).status == 201)
            #expect(try await render.count("uploads", where: "user_id = '\(user.uuidString)'") == 3)
            let files = try FileManager.default.subpathsOfDirectory(atPath: render.blobs.path).filter { $0.contains(".") }
            #expect(files.count == 4, "\(files)")
        }
    }

    @Test func aHEICFromAnIPhoneIsAnUploadKeptAsSent() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let user = UUID()
            let heic = try IPhonePhoto.made("heic")
            let upload = try await render.upload(heic, user: user)
            #expect(upload.status == 201, "\(upload.text)")
            let body = try upload.json()
            #expect(body["format"] as? String == "heif" && body["width"] as? Int == 480 && body["height"] as? Int == 640)
            let url = try #require(body["url"] as? String)
            let original = try await render.call(.get, String(url.dropFirst("https://splash.test".count)), user: nil)
            #expect(original.status == 200 && original.headers["content-type"] == "image/heif" && Array(original.body) == heic)
            // A preview of it is a JPEG, upright.
            let id = try #require(body["uploadId"] as? String)
            let preview = try await render.call(
                .post,
                "/v1/edits/preview",
                user: user,
                json: #"{"source":{"uploadId":"\#(id)"},"filters":[{"name":"sepia"}]}"#
            )
            #expect(preview.status == 200 && preview.headers["content-type"] == "image/jpeg", "\(preview.status) \(preview.text.prefix(200))")
            let header = try SourceInspection.inspect(Array(preview.body), limits: SourceLimits())
            #expect(header.width < header.height)
        }
    }

    @Test func aMediaLinkWithASizeAnswersACopyRenderedOnceAndKeptBesideTheImage() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let user = UUID()
            let upload = try await render.upload(try RenderHarness.photo("FreshFlower"), user: user)
            let url = try #require(try upload.json()["url"] as? String)
            let path = String(url.dropFirst("https://splash.test".count))
            let sized = { (query: String, headers: [(String, String)]) in
                try await render.call(.get, "\(path)&\(query)", user: nil, headers: headers)
            }
            let tile = try await sized("w=200&h=200", [("Accept", "image/webp")])
            #expect(tile.status == 200 && tile.headers["content-type"] == "image/webp" && tile.headers["vary"] == "Accept")
            let header = try SourceInspection.inspect(Array(tile.body), limits: SourceLimits())
            #expect(header.width == 200 && header.height == 200)
            let jpeg = try await sized("w=640&fit=contain&q=70", [])
            #expect(
                try jpeg.headers["content-type"] == "image/jpeg" && SourceInspection.inspect(Array(jpeg.body), limits: SourceLimits()).width == 640
            )
            let etag = try #require(tile.headers["etag"])
            #expect(try await sized("w=200&h=200", [("Accept", "image/webp"), ("If-None-Match", etag)]).status == 304)
            // Out of range is 400; the size does not mend a broken signature.
            let refused = try await sized("w=0", [])
            #expect(refused.status == 400 && refused.text.contains("invalid-size"))
            let tampered = path.replacingOccurrences(of: "signature=", with: "signature=0")
            #expect(try await render.call(.get, "\(tampered)&w=200", user: nil).status == 403)
            let variants = try FileManager.default.subpathsOfDirectory(atPath: render.blobs.path).filter { $0.contains("-variants/") }
            #expect(variants.count == 2, "\(variants)")
        }
    }

    @Test func aRenderedEditCarriesThumbnailsThatGoWithIt() async throws {
        try await RenderHarness.with { render in
            let user = UUID()
            let created = try await render.createEdit(#"{"source":{"unsplashPhotoId":"FreshFlower-1"},"filters":[]}"#, user: user)
            let id = try #require(try created.json()["id"] as? String)
            let edit = try await render.finished(id, user: user)
            let thumbnails = try #require(edit["thumbnails"] as? [String: String])
            for (size, width) in [("small", 200), ("medium", 640)] {
                let url = try #require(thumbnails[size])
                let answer = try await render.call(.get, String(url.dropFirst("https://splash.test".count)), user: nil)
                #expect(try answer.status == 200 && SourceInspection.inspect(Array(answer.body), limits: SourceLimits()).width == width)
            }
            #expect(try FileManager.default.subpathsOfDirectory(atPath: render.blobs.path).filter { $0.contains("-variants/") }.count == 2)
            #expect(try await render.call(.delete, "/v1/edits/\(id)", user: user).status == 204)
            #expect(try FileManager.default.subpathsOfDirectory(atPath: render.blobs.path).filter { $0.contains("-variants/") }.isEmpty)
        }
    }

    @Test func mediaLinksThatAreExpiredOrTamperedAreRefused() async throws {
        try await RenderHarness.with(["RENDER_MEDIA_URL_TTL": "2s"]) { render in
            let user = UUID()
            let created = try await render.createEdit(#"{"source":{"unsplashPhotoId":"FreshFlower-1"},"filters":[]}"#, user: user)
            let edit = try await render.finished(try #require(try created.json()["id"] as? String), user: user)
            let url = try #require((edit["result"] as? [String: Any])?["url"] as? String)
            let path = String(url.dropFirst("https://splash.test".count))
            #expect(try await render.call(.get, path, user: nil).status == 200)
            let otherUser = path.replacingOccurrences(of: user.uuidString.lowercased(), with: UUID().uuidString.lowercased())
            #expect(try await render.call(.get, otherUser, user: nil).status == 403)
            let longer = path.replacingOccurrences(of: "expires=", with: "expires=9")
            #expect(try await render.call(.get, longer, user: nil).status == 403)
            try await Task.sleep(for: .seconds(3))
            let expired = try await render.call(.get, path, user: nil)
            #expect(expired.status == 403 && expired.text.contains("expired"))
        }
    }

    @Test func aPreviewIsAJPEGOfAtMost400Pixels() async throws {
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let user = UUID()
            let preview = try await render.call(
                .post,
                "/v1/edits/preview",
                user: user,
                json: #"{"source":{"unsplashPhotoId":"Aqua-1"},"filters":[{"name":"chrome"}]}"#
            )
            #expect(preview.status == 200)
            #expect(preview.headers["content-type"] == "image/jpeg")
            #expect(Array(preview.body.prefix(3)) == [0xFF, 0xD8, 0xFF])
            #expect(preview.body.count < 100_000)
            let bad = try await render.call(
                .post,
                "/v1/edits/preview",
                user: user,
                json: #"{"source":{"unsplashPhotoId":"elsewhere-1"},"filters":[]}"#
            )
            #expect(bad.status == 422 && bad.text.contains("not one of them"))
            #expect(try await render.count("edits") == 0)
        }
    }
}
