import CatalogClient
import Foundation
import Imaging

/// An image a client can show: a link, its size, and when the link stops working (`nil` for an
/// Unsplash image, hotlinked from Unsplash and never re-hosted).
struct MediaLink: Sendable, Equatable {
    var url: String
    var width: Int
    var height: Int
    var expiresAt: Date?
    /// The same image smaller, for lists; `nil` where none is made (an edit's).
    var thumbnails: Thumbnails? = nil
}

/// An image sized for a phone's lists: a 200 px square (`small`, cut from the centre) and one
/// 640 px wide (`medium`). A stored image's are signed render links pinned to its version, so a
/// page asked twice within a link bucket gives the same URLs; an Unsplash image's are Unsplash's
/// own sized URLs (never re-hosted).
struct Thumbnails: Sendable, Equatable {
    var small: String
    var medium: String

    /// Unsplash's sizes of `url` (its `w`, `h`, `fit` and `crop` replaced; `ixid` and the rest kept).
    init?(unsplash url: String) {
        guard var small = URLComponents(string: url), small.host != nil else { return nil }
        let kept = (small.queryItems ?? []).filter { !["w", "h", "fit", "crop"].contains($0.name) }
        var medium = small
        small.queryItems =
            kept + [URLQueryItem(name: "w", value: "200"), URLQueryItem(name: "h", value: "200"), URLQueryItem(name: "fit", value: "crop")]
        medium.queryItems = kept + [URLQueryItem(name: "w", value: "640"), URLQueryItem(name: "fit", value: "max")]
        guard let smallURL = small.string, let mediumURL = medium.string else { return nil }
        (self.small, self.medium) = (smallURL, mediumURL)
    }

    /// Sizes of an edit-render media link (its `w`, `h`, `fit` beside the signature).
    init(mediaLink url: String) {
        (small, medium) = TransformRequest.thumbnails(ofMediaLink: url)
    }

    init(small: String, medium: String) {
        self.small = small
        self.medium = medium
    }
}

/// A photo as a person's lists show it: its key, and what is known of it — an Unsplash photo's
/// data, or a link to an edit's or a post's image (`media` nil when it is no longer there).
struct ShownPhoto: Sendable, Equatable {
    var key: PhotoKey
    var unsplash: CatalogPhoto?
    var media: MediaLink?

    /// Its list sizes: an Unsplash photo's from its raw URL, a post's from its image.
    var thumbnails: Thumbnails? {
        if let urls = unsplash?.urls, let source = urls["raw"] ?? urls["regular"] ?? urls["full"] { return Thumbnails(unsplash: source) }
        return media?.thumbnails
    }
}

/// A person's avatar as lists show it: one stored in Storage's public `avatars` bucket behind
/// `publicBase` is its 256 px variant; any other URL is shown as written (auth's profiles
/// answer the same, `AuthDataTables.shownAvatar`).
enum ShownAvatar {
    static func url(_ written: String?, publicBase: String) -> String? {
        guard let written, written.hasPrefix("\(publicBase)/storage/v1/object/public/avatars/") else { return written }
        let rest = written.dropFirst("\(publicBase)/storage/v1/object/public/avatars/".count)
        return "\(publicBase)/storage/v1/render/image/public/avatars/\(rest)\(rest.contains("?") ? "&" : "?")width=256&height=256"
    }
}
