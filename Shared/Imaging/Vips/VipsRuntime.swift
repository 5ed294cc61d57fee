import CVips

/// libvips, started once per process with Splash's settings: the operation cache off (every
/// render is new work, and cached operations would keep pixels alive), one libvips worker thread
/// per render (renders run in parallel instead, one per core), and every loader blocked except
/// JPEG, PNG, WebP and HEIF (libheif: HEIC and AVIF), so no untrusted or unexpected decoder
/// (ImageMagick, SVG, PDF, TIFF…) ever sees a user's bytes.
enum VipsRuntime {
    /// Starts libvips on first use; later calls return the first outcome.
    /// - Throws: `ImagingError.unavailable` when libvips cannot start.
    static func start() throws(ImagingError) {
        if let failure = started { throw failure }
    }

    /// `start()` for code that reports libvips' failures as `VipsFailure`: every way of making an
    /// image goes through it, so nothing touches libvips before it is set up.
    static func ensureStarted() throws(VipsFailure) {
        if let failure = started { throw VipsFailure(message: failure.description) }
    }

    private static let started: ImagingError? = {
        guard splash_vips_init() == 0 else {
            return .unavailable(VipsFailure.take().message)
        }
        vips_cache_set_max(0)
        vips_concurrency_set(1)
        vips_block_untrusted_set(1)
        vips_operation_block_set("VipsForeignLoad", 1)
        for loader in ["VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadWebp", "VipsForeignLoadHeif"] {
            vips_operation_block_set(loader, 0)
        }
        return nil
    }()

    /// Frees what libvips keeps for the calling thread; called by every thread that rendered, when
    /// its render is done.
    static func releaseThreadState() {
        vips_thread_shutdown()
    }
}

/// The message libvips left for a failed call, read with `vips_error_buffer_copy` (which also
/// clears it), never from the shared buffer another thread may be writing.
struct VipsFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }

    static func take() -> VipsFailure {
        guard let copy = vips_error_buffer_copy() else { return VipsFailure(message: "libvips failed") }
        defer { splash_g_free(copy) }
        let text = String(cString: copy).trimmingCharacters(in: .whitespacesAndNewlines)
        return VipsFailure(message: text.isEmpty ? "libvips failed" : text)
    }
}
