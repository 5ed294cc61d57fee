import AsyncHTTPClient
import Contracts
import Foundation
import Imaging
import TestSupport
import Testing

/// Storage's image transformations: `/storage/v1/render/image/{authenticated,public,sign}/…`.
@Suite("Image transformations") struct ImageRenderTests {
    /// The size and format of an answer's image, read from its header.
    static func header(_ bytes: some Collection<UInt8>) throws -> SourceHeader {
        try SourceInspection.inspect(Array(bytes), limits: SourceLimits())
    }

    @Test func aTransformIsSizedNegotiatedKeptAndDroppedWithItsObject() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let name = "\(ana.uuidString)/beach.jpg"
            let aqua = try SocialHarness.photo("Aqua")
            let original = try Self.header(aqua)
            #expect(try await social.upload(aqua, name: name, user: ana).status == 200)
            let render = { (query: String, accept: String?) in
                try await social.call(
                    .get,
                    "/storage/v1/render/image/authenticated/posts/\(name)?\(query)",
                    user: ana,
                    headers: accept.map { [("Accept", $0)] } ?? []
                )
            }

            // A square tile, WebP for a client that takes it, JPEG for one that does not.
            let tile = try await render("width=200&height=200", "image/webp,image/*")
            #expect(tile.status == 200, "\(tile.text)")
            #expect(tile.headers["content-type"] == "image/webp" && tile.headers["vary"] == "Accept")
            let tileHeader = try Self.header(tile.body)
            #expect(tileHeader.format == .webp && tileHeader.width == 200 && tileHeader.height == 200)
            let jpeg = try await render("width=200&height=200", nil)
            #expect(try jpeg.headers["content-type"] == "image/jpeg" && Self.header(jpeg.body).format == .jpeg)
            let origin = try await render("width=200&height=200&format=origin", "image/webp")
            #expect(origin.headers["content-type"] == "image/jpeg" && origin.headers["vary"] == nil)
            // contain fits inside the box, fill stretches to it, one side keeps the aspect ratio.
            let contained = try Self.header(try await render("width=200&height=200&resize=contain", nil).body)
            #expect(max(contained.width, contained.height) == 200 && contained.width != contained.height)
            let filled = try Self.header(try await render("width=300&height=100&resize=fill", nil).body)
            #expect(filled.width == 300 && filled.height == 100)
            let narrow = try Self.header(try await render("width=100", nil).body)
            #expect(narrow.width == 100 && abs(narrow.height - original.height * 100 / original.width) <= 1)
            // Never larger than the original (a 200 px square stored as WebP), whatever the resize.
            let square = "\(ana.uuidString)/square.webp"
            #expect(try await social.upload(Array(tile.body), name: square, user: ana).status == 200)
            for resize in ["cover", "contain", "fill"] {
                let answer = try await social.call(
                    .get,
                    "/storage/v1/render/image/authenticated/posts/\(square)?width=1000&height=800&resize=\(resize)",
                    user: ana
                )
                let header = try Self.header(answer.body)
                #expect(header.format == .webp && header.width <= 200 && header.height <= 200, "\(resize): \(header)")
            }
            _ = try await social.call(.delete, "/storage/v1/object/posts", user: ana, json: #"{"prefixes":["\#(square)"]}"#)

            // The same variant again is the kept one: its ETag answers 304.
            let again = try await render("width=200&height=200", "image/webp")
            #expect(again.body == tile.body && again.headers["etag"] == tile.headers["etag"])
            let etag = try #require(tile.headers["etag"])
            let cached = try await social.call(
                .get,
                "/storage/v1/render/image/authenticated/posts/\(name)?width=200&height=200",
                user: ana,
                headers: [("Accept", "image/webp"), ("If-None-Match", etag)]
            )
            #expect(cached.status == 304 && cached.body.isEmpty)

            // Out of range or unknown: 400 in Storage's shape; someone else's pending upload: 404.
            for query in ["width=0", "width=2501", "height=abc", "quality=19", "quality=101", "resize=zoom", "format=gif"] {
                let refused = try await render(query, nil)
                #expect(refused.status == 400 && (try? refused.json())?["error"] as? String == "InvalidRequest", "\(query): \(refused.status)")
            }
            let foreign = try await social.call(.get, "/storage/v1/render/image/authenticated/posts/\(name)?width=10", user: ben)
            #expect(foreign.status == 404)
            #expect(try await social.call(.get, "/storage/v1/render/image/public/posts/\(name)?width=10", user: nil).status == 404)

            // The variants are kept beside the object's bytes (format=origin of a JPEG is the JPEG
            // variant), and go with them.
            let variants = social.blobFiles().filter { $0.contains("-variants/") }
            #expect(variants.count == 5, "\(variants)")
            #expect(
                try await social.upload(try SocialHarness.photo("FreshFlower"), name: name, user: ana, headers: [("x-upsert", "true")]).status == 200
            )
            #expect(social.blobFiles().filter { $0.contains("-variants/") }.isEmpty)
            #expect(try await render("width=200&height=200", "image/webp").body != tile.body)
            _ = try await social.call(.delete, "/storage/v1/object/posts", user: ana, json: #"{"prefixes":["\#(name)"]}"#)
            #expect(social.blobFiles().isEmpty, "\(social.blobFiles())")

            // A public bucket's object is transformed for anyone.
            let avatar = "\(ana.uuidString)/me.jpg"
            #expect(try await social.upload(aqua, bucket: "avatars", name: avatar, user: ana).status == 200)
            let small = try await social.call(.get, "/storage/v1/render/image/public/avatars/\(avatar)?width=64&height=64", user: nil)
            #expect(try small.status == 200 && Self.header(small.body).width == 64)
            // Anyone asking for size after size is answered, but only so many variants are kept.
            for width in 1...30 {
                let answer = try await social.call(.get, "/storage/v1/render/image/public/avatars/\(avatar)?width=\(width)", user: nil)
                #expect(try answer.status == 200 && Self.header(answer.body).width == width)
            }
            #expect(social.blobFiles().filter { $0.contains("-variants/") }.count == 24)
        }
    }

    @Test func aHEICFromAnIPhoneIsStoredAsSentAndServedAsJPEGOrWebP() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let name = "\(ana.uuidString)/IMG_0001.HEIC"
            let heic = try IPhonePhoto.made("heic")
            #expect(try await social.upload(heic, name: name, user: ana).status == 200)
            let info = try await social.call(.get, "/storage/v1/object/info/posts/\(name)", user: ana).json()
            #expect(info["content_type"] as? String == "image/heif")
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana).body) == heic)
            for (accept, format) in [(nil, SourceFormat.jpeg), ("image/webp", .webp)] as [(String?, SourceFormat)] {
                for query in ["width=120", "width=120&format=origin"] {
                    let answer = try await social.call(
                        .get,
                        "/storage/v1/render/image/authenticated/posts/\(name)?\(query)",
                        user: ana,
                        headers: accept.map { [("Accept", $0)] } ?? []
                    )
                    let header = try Self.header(answer.body)
                    let wanted: SourceFormat = query.contains("origin") ? .jpeg : format
                    #expect(header.format == wanted && header.width == 120 && header.height == 160, "\(query) \(accept ?? ""): \(header)")
                }
            }
        }
    }

    @Test func listsCarryThumbnailsThatAreStableAndShowTheSizedImage() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            try await social.register(ana, username: "ana_\(ana.uuidString.prefix(6).lowercased())")
            #expect(try await social.upload(try SocialHarness.photo("Aqua"), name: "\(ana.uuidString)/sea.jpg", user: ana).status == 200)
            let posted = try await social.post(#"{"photo":{"objectKey":"posts/\#(ana.uuidString)/sea.jpg"},"caption":"Sea"}"#, user: ana)
            #expect(posted.status == 201, "\(posted.text)")
            #expect(try await social.post(#"{"photo":{"unsplashPhotoId":"Aqua-1"},"caption":"Borrowed"}"#, user: ana).status == 201)

            // The feed: each post's thumbnails beside its media, the same when asked again.
            let feed = try await social.call(.get, "/v1/feed", user: ana).json()
            let items = try #require(feed["items"] as? [[String: Any]])
            #expect(items.count == 2)
            let again = try #require(try await social.call(.get, "/v1/feed", user: ana).json()["items"] as? [[String: Any]])
            let stored = try #require(items.first { $0["caption"] as? String == "Sea" }?["thumbnails"] as? [String: String])
            #expect(stored == (again.first { $0["caption"] as? String == "Sea" }?["thumbnails"] as? [String: String]))
            // A stored photo's are signed render links, read without a session at their sizes.
            for (size, width, height) in [("small", 200, 200), ("medium", 640, 400)] {
                let url = try #require(stored[size])
                #expect(url.hasPrefix("https://splash.test/storage/v1/render/image/sign/posts/"), "\(url)")
                let answer = try await social.call(.get, String(url.dropFirst("https://splash.test".count)), user: nil)
                let header = try Self.header(answer.body)
                #expect(answer.status == 200 && header.width == width && header.height == height, "\(size): \(header)")
            }
            // An Unsplash photo's are Unsplash's own sized URLs.
            let unsplash = try #require(items.first { $0["caption"] as? String == "Borrowed" }?["thumbnails"] as? [String: String])
            #expect(unsplash["small"]?.contains("w=200&h=200&fit=crop") == true && unsplash["medium"]?.contains("w=640") == true, "\(unsplash)")

            // The likes list: each photo's thumbnails, an Unsplash photo's and a post's.
            let postKey = try #require(try posted.json()["photoKey"] as? String)
            #expect(try await social.call(.put, "/v1/likes/unsplash:Aqua-1", user: ana).status < 300)
            #expect(try await social.call(.put, "/v1/likes/\(postKey)", user: ana).status < 300)
            let likes = try #require(try await social.call(.get, "/v1/likes", user: ana).json()["items"] as? [[String: Any]])
            let thumbnails = likes.map { (($0["photo"] as? [String: Any])?["thumbnails"] as? [String: String])?["small"] ?? "none" }
            #expect(thumbnails.contains { $0.contains("w=200&h=200&fit=crop") }, "\(thumbnails)")
            #expect(thumbnails.contains { $0 == stored["small"] }, "\(thumbnails)")
        }
    }

    @Test func aStoredAvatarIsShownAsIts256PixelVariantAndAnOutsideOneAsWritten() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let stored = "https://splash.test/storage/v1/object/public/avatars/\(ana.uuidString)/me.jpg"
            let outside = "https://example.com/ben.png"
            for (user, avatar) in [(ana, stored), (ben, outside)] {
                try await social.register(user, username: "u_\(user.uuidString.prefix(8).lowercased())")
                try await TestKafka.shared.publish(
                    [
                        ProfileUpdated(
                            userId: user,
                            username: "u_\(user.uuidString.prefix(8).lowercased())",
                            avatarUrl: avatar,
                            changed: [.avatarUrl],
                            updatedAt: Date()
                        )
                    ],
                    source: "/splash/auth"
                )
                try await social.waitFor("the avatar of \(user)") { try await social.count("profiles", where: "avatar_url = '\(avatar)'") == 1 }
                #expect(try await social.post(#"{"photo":{"unsplashPhotoId":"Aqua-1"},"caption":"hi"}"#, user: user).status == 201)
            }
            let items = try #require(try await social.call(.get, "/v1/feed", user: ana).json()["items"] as? [[String: Any]])
            let avatars = Set(items.compactMap { ($0["author"] as? [String: Any])?["avatarUrl"] as? String })
            #expect(avatars == ["https://splash.test/storage/v1/render/image/public/avatars/\(ana.uuidString)/me.jpg?width=256&height=256", outside])
        }
    }

    @Test func nothingShownToOthersKeepsWhatTheCameraWroteIntoIt() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            // A phone's JPEG: an EXIF block with a GPS position.
            let photo = try IPhonePhoto.made("jpg")
            func hasEXIF(_ bytes: [UInt8]) -> Bool { bytes.indices.dropLast(4).contains { Array(bytes[$0..<$0 + 4]) == Array("Exif".utf8) } }
            #expect(hasEXIF(photo))
            // An avatar, public to anyone: stored re-encoded, upright, without it.
            #expect(try await social.upload(photo, bucket: "avatars", name: "\(ana.uuidString)/me.jpg", user: ana).status == 200)
            let avatar = Array(try await social.call(.get, "/storage/v1/object/public/avatars/\(ana.uuidString)/me.jpg", user: nil).body)
            #expect(!hasEXIF(avatar))
            let header = try Self.header(avatar)
            #expect(header.width == 480 && header.height == 640 && header.orientation == 1)
            // A post's photo, seen by everyone signed in: re-encoded without it too.
            #expect(try await social.upload(photo, name: "\(ana.uuidString)/walk.jpg", user: ana).status == 200)
            #expect(try await social.post(#"{"photo":{"objectKey":"posts/\#(ana.uuidString)/walk.jpg"},"caption":"walk"}"#, user: ana).status == 201)
            let posted = Array(try await social.call(.get, "/storage/v1/object/posts/\(ana.uuidString)/walk.jpg", user: UUID()).body)
            #expect(
                try !posted.isEmpty && !hasEXIF(posted) && Self.header(posted).width == 480,
                "\(posted.count) \(hasEXIF(posted)) \((try? Self.header(posted)).map { "\($0)" } ?? "none")"
            )
        }
    }

    @Test func fiftyRequestsForOneNewVariantCauseOneRender() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let name = "\(ana.uuidString)/busy.jpg"
            #expect(try await social.upload(try SocialHarness.photo("Aqua"), name: name, user: ana).status == 200)
            let answers = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try await social.call(.get, "/storage/v1/render/image/authenticated/posts/\(name)?width=320&height=240", user: ana)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == 200 && $0.body == answers[0].body })
            let metrics = try await social.call(.get, "/metrics", user: nil).text
            #expect(
                metrics.contains("storage_image_variants_rendered_total 1\n"),
                "\(metrics.split(separator: "\n").filter { $0.contains("variants") })"
            )
        }
    }

    @Test func aSignedRenderLinkCarriesItsTransformAndPinsItsVersion() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let name = "\(ana.uuidString)/pinned.jpg"
            #expect(try await social.upload(try SocialHarness.photo("Aqua"), name: name, user: ana).status == 200)
            let signed = try await social.call(
                .post,
                "/storage/v1/object/sign/posts/\(name)",
                user: ana,
                json: #"{"expiresIn":600,"transform":{"width":120,"height":90,"resize":"cover"}}"#
            )
            let link = try #require(try signed.json()["signedURL"] as? String)
            #expect(link.hasPrefix("/render/image/sign/posts/\(name)?token="))
            let shown = try await social.call(.get, "/storage/v1\(link)", user: nil)
            #expect(shown.status == 200 && shown.headers["cache-control"] == "public, max-age=31536000, immutable")
            let header = try Self.header(shown.body)
            #expect(header.width == 120 && header.height == 90)
            // The transform is the token's: changing it breaks the signature; query parameters
            // beside it change nothing.
            let token = String(link[link.range(of: "token=")!.upperBound...])
            let forged = token.replacingOccurrences(of: "w120-h90", with: "w2000-h2000")
            let refused = try await social.call(.get, "/storage/v1/render/image/sign/posts/\(name)?token=\(forged)", user: nil)
            #expect(refused.status == 400 && (try? refused.json())?["error"] as? String == "InvalidSignature")
            let extra = try await social.call(.get, "/storage/v1\(link)&width=2000", user: nil)
            #expect(try Self.header(extra.body).width == 120)
            #expect(try await social.call(.get, "/storage/v1/render/image/sign/posts/\(name)", user: nil).status == 400)

            // Many at once, with the same transform; a bad transform is refused.
            let many = try await social.call(
                .post,
                "/storage/v1/object/sign/posts",
                user: ana,
                json: #"{"expiresIn":600,"paths":["\#(name)"],"transform":{"width":"60"}}"#
            )
            let items = try #require(try JSONSerialization.jsonObject(with: many.body) as? [[String: Any]])
            let batchLink = try #require(items.first?["signedURL"] as? String)
            #expect(try Self.header(try await social.call(.get, "/storage/v1\(batchLink)", user: nil).body).width == 60)
            let badTransform = try await social.call(
                .post,
                "/storage/v1/object/sign/posts/\(name)",
                user: ana,
                json: #"{"expiresIn":600,"transform":{"width":-1}}"#
            )
            #expect(badTransform.status == 400)

            // A new version (an upsert) is not what the link showed: 404, and new links.
            #expect(
                try await social.upload(try SocialHarness.photo("FreshFlower"), name: name, user: ana, headers: [("x-upsert", "true")]).status == 200
            )
            #expect(try await social.call(.get, "/storage/v1\(link)", user: nil).status == 404)
        }
    }

    /// On S3 with `S3_PRESIGN`, a variant is rendered through Splash on its first request and
    /// answered with a redirect to the bucket after that; with `STORAGE_RENDER_AVIF` a browser
    /// that takes AVIF gets it, and WebP stays a variant of its own.
    @Test func onS3AKeptVariantIsPresignedAndAVIFIsRenderedForAClientThatTakesIt() async throws {
        let server = try await MotoServer()
        defer { server.stop() }
        let bucket = "render-\(UUID().uuidString.prefix(8).lowercased())"
        _ = try await server.store(bucket: bucket)
        let overrides = server.blobSettings(bucket: bucket).merging(["S3_PRESIGN": "true", "STORAGE_RENDER_AVIF": "true"]) { _, new in new }
        try await SocialHarness.with(overrides) { social in
            let ana = UUID()
            let name = "\(ana.uuidString)/beach.jpg"
            #expect(try await social.upload(try SocialHarness.photo("Aqua"), name: name, user: ana).status == 200)
            let path = "/storage/v1/render/image/authenticated/posts/\(name)?width=200&height=200"
            let browser = [("Accept", "image/avif,image/webp,image/apng,*/*;q=0.8")]

            let first = try await social.call(.get, path, user: ana, headers: browser)
            #expect(first.status == 200 && first.headers["content-type"] == "image/avif" && first.headers["vary"] == "Accept", "\(first.text)")
            let header = try Self.header(first.body)
            #expect(header.format == .avif && header.width == 200 && header.height == 200)

            // Asked again, by a client that shows the redirect as it comes.
            func redirect(_ accept: String) async throws -> HTTPClientResponse {
                var request = HTTPClientRequest(url: social.app.baseURL + path)
                request.headers.add(name: "Authorization", value: "Bearer \(try social.token(user: ana))")
                request.headers.add(name: "Accept", value: accept)
                return try await HTTPClient.notFollowingRedirects.execute(request, timeout: .seconds(10))
            }
            let again = try await redirect(browser[0].1)
            let location = try #require(again.headers.first(name: "location"))
            #expect(again.status == .found && location.hasPrefix(server.endpoint.absoluteString + "/\(bucket)/"))
            #expect(location.contains("response-content-type=image%2Favif") && location.contains("X-Amz-Signature="), "\(location)")
            #expect(
                again.headers.first(name: "cache-control")?.hasPrefix("private, max-age=") == true && again.headers.first(name: "vary") == "Accept"
            )
            let fromBucket = try await HTTPClient.shared.execute(HTTPClientRequest(url: location), timeout: .seconds(10))
            #expect(fromBucket.status == .ok && fromBucket.headers["content-type"] == ["image/avif"])
            #expect(Array(buffer: try await fromBucket.body.collect(upTo: 1 << 20)) == Array(first.body))
            // A client that follows it gets the image.
            #expect(try await social.call(.get, path, user: ana, headers: browser).body == first.body)
            // Still the object's read rules: another user is refused before any redirect.
            #expect(try await social.call(.get, path, user: UUID(), headers: browser).status == 404)

            // WebP is a variant of its own, rendered once and then presigned too.
            let webp = try await social.call(.get, path, user: ana, headers: [("Accept", "image/webp")])
            #expect(webp.status == 200 && webp.headers["content-type"] == "image/webp")
            #expect(try await redirect("image/webp").status == .found)
        }
    }
}
