import Blobs

extension SourceInspection {
    /// The header of a stored blob: read from its file when the store keeps blobs in files (libvips
    /// reads only what it needs), else from its bytes.
    /// - Throws: `ImagingError` for what is not a photo Splash can edit (`.unreadable` when the
    ///   blob is gone), or the store's error.
    package static func inspect(_ key: BlobKey, in blobs: any BlobStore, limits: SourceLimits) async throws -> SourceHeader {
        if let file = blobs.localFile(key) {
            return try inspect(fileAt: file.path, limits: limits)
        }
        guard let bytes = try await blobs.get(key) else { throw ImagingError.unreadable("the stored image is gone") }
        return try inspect(bytes, limits: limits)
    }
}
