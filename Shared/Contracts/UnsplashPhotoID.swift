/// What an Unsplash photo id may be: 1–64 URL-safe characters (letters, digits, `-`, `_`).
/// Anything else is refused before it can reach a URL — by photo-catalog for its routes and by
/// edit-render for an edit's source.
public enum UnsplashPhotoID {
    public static func isValid(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }
}
