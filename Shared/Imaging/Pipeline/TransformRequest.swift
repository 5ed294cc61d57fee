import Foundation

/// A transform as a request asks for it: sizes, resize, quality, and a format or none (then the
/// client's `Accept` chooses). Storage's render URLs name the parameters `width`, `height`,
/// `resize`, `quality`, `format`; edit-render's media links `w`, `h`, `fit`, `q`, `format`.
package struct TransformRequest: Sendable, Hashable {
    /// What a query calls each parameter.
    package struct Names: Sendable {
        var width, height, resize, quality: String

        package static let storage = Names(width: "width", height: "height", resize: "resize", quality: "quality")
        package static let media = Names(width: "w", height: "h", resize: "fit", quality: "q")
    }

    /// The sizes every typed list answers beside a photo (`thumbnails`): a 200 px square cut from
    /// the centre, and a copy 640 px wide.
    package static let smallThumbnail = TransformRequest(width: 200, height: 200)
    package static let mediumThumbnail = TransformRequest(width: 640)

    package var width: Int?
    package var height: Int?
    package var resize: ImageTransform.Resize
    package var quality: Int
    /// `origin`: the stored format; `nil`: WebP when accepted, else the stored format.
    package var format: String?

    package init(
        width: Int? = nil,
        height: Int? = nil,
        resize: ImageTransform.Resize = .cover,
        quality: Int = 80,
        format: String? = nil
    ) {
        self.width = width
        self.height = height
        self.resize = resize
        self.quality = quality
        self.format = format
    }

    /// From a URL's query, the parameters named as `names` says.
    /// - Throws: `TransformRefusal` naming the first value out of range.
    package init(query: some Sequence<(key: Substring, value: Substring)>, names: Names) throws(TransformRefusal) {
        var fields: [Substring: Substring] = [:]
        for (key, value) in query { fields[key] = value }
        try self.init(names: names) { fields[Substring($0)].map(String.init) }
    }

    /// Whether `query` asks for a transform at all (any of the parameters `names` says).
    package static func isAsked(in query: some Sequence<(key: Substring, value: Substring)>, names: Names) -> Bool {
        let asked: Set<Substring> = [Substring(names.width), Substring(names.height), Substring(names.resize), Substring(names.quality), "format"]
        return query.contains { asked.contains($0.key) }
    }

    /// From `fields` (a query's, or a JSON object's values as text).
    /// - Throws: `TransformRefusal` naming the first value out of range.
    package init(names: Names = .storage, fields: (String) -> String?) throws(TransformRefusal) {
        func side(_ name: String) throws(TransformRefusal) -> Int? {
            guard let text = fields(name) else { return nil }
            guard let value = Int(text), ImageTransform.sides.contains(value) else {
                throw TransformRefusal(message: "\(name): a whole number of pixels from 1 to 2500")
            }
            return value
        }
        width = try side(names.width)
        height = try side(names.height)
        if let text = fields(names.resize) {
            guard let value = ImageTransform.Resize(rawValue: text) else {
                throw TransformRefusal(message: "\(names.resize): cover, contain or fill")
            }
            resize = value
        } else {
            resize = .cover
        }
        if let text = fields(names.quality) {
            guard let value = Int(text), ImageTransform.qualities.contains(value) else {
                throw TransformRefusal(message: "\(names.quality): a whole number from 20 to 100")
            }
            quality = value
        } else {
            quality = 80
        }
        switch fields("format") {
        case nil: format = nil
        case "origin": format = "origin"
        // storage-js' `format: "avif"`: as none asked, the client's Accept chooses (AVIF where
        // it is rendered and accepted).
        case "avif": format = nil
        default: throw TransformRefusal(message: "format: origin, or none to let Accept choose")
        }
    }

    /// The transform to render for an image stored as `stored` (its media type): JPEG for a
    /// stored HEIF or AVIF. With no format asked, `accept` chooses: AVIF when it names
    /// `image/avif` and `avif` allows it (`STORAGE_RENDER_AVIF`), else WebP when it names
    /// `image/webp`, else the stored format.
    package func transform(stored: String, accept: String?, avif: Bool = false) -> ImageTransform {
        let origin: ImageTransform.Format =
            switch stored {
            case "image/png": .png
            case "image/webp": .webp
            default: .jpeg
            }
        let accepted = accept?.lowercased() ?? ""
        let format: ImageTransform.Format =
            if self.format != nil {
                origin
            } else if avif, accepted.contains("image/avif") {
                .avif
            } else if accepted.contains("image/webp") {
                .webp
            } else {
                origin
            }
        return ImageTransform(width: width, height: height, resize: resize, quality: quality, format: format)
    }

    /// An edit-render media link's thumbnails: the link with `smallThumbnail`'s and
    /// `mediumThumbnail`'s sizes beside its signature.
    package static func thumbnails(ofMediaLink url: String) -> (small: String, medium: String) {
        ("\(url)&\(smallThumbnail.query(.media))", "\(url)&\(mediumThumbnail.query(.media))")
    }

    /// The query that asks for it, its parameters named as `names` says (defaults left out).
    package func query(_ names: Names) -> String {
        var items: [String] = []
        if let width { items.append("\(names.width)=\(width)") }
        if let height { items.append("\(names.height)=\(height)") }
        if resize != .cover { items.append("\(names.resize)=\(resize.rawValue)") }
        if quality != 80 { items.append("\(names.quality)=\(quality)") }
        if let format { items.append("format=\(format)") }
        return items.joined(separator: "&")
    }

    /// `w200-h0-cover-q80-auto`: what a signed render link signs and carries.
    package var signed: String { "w\(width ?? 0)-h\(height ?? 0)-\(resize.rawValue)-q\(quality)-\(format ?? "auto")" }

    package init?(signed text: Substring) {
        let parts = text.split(separator: "-")
        guard parts.count == 5, parts[0].hasPrefix("w"), parts[1].hasPrefix("h"), parts[3].hasPrefix("q"),
            let width = Int(parts[0].dropFirst()), let height = Int(parts[1].dropFirst()), let quality = Int(parts[3].dropFirst()),
            let resize = ImageTransform.Resize(rawValue: String(parts[2])), parts[4] == "auto" || parts[4] == "origin"
        else { return nil }
        self.init(
            width: width == 0 ? nil : width,
            height: height == 0 ? nil : height,
            resize: resize,
            quality: quality,
            format: parts[4] == "auto" ? nil : "origin"
        )
    }
}

/// A transform's parameter out of range; `message` names it.
package struct TransformRefusal: Error, Equatable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}
