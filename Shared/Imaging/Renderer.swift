import NIOPosix
import ServiceLifecycle

/// Runs renders on threads of their own — libvips blocks, and Swift's cooperative threads must
/// not — at most `threads` at a time, each render using one libvips thread. Run it as a service:
/// it stops taking renders at shutdown.
package final class Renderer: Service, Sendable {
    private let pool: NIOThreadPool
    package let threads: Int

    /// - Throws: `ImagingError.unavailable` when libvips cannot start.
    package init(threads: Int) throws(ImagingError) {
        try VipsRuntime.start()
        self.threads = threads
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    /// Renders on one of the pool's threads; the caller's task waits without blocking a thread.
    /// - Throws: `ImagingError` for a source that cannot be rendered.
    package func render(
        _ source: [UInt8],
        filters: FilterChain,
        output: OutputRules,
        limits: SourceLimits = SourceLimits()
    ) async throws -> RenderedImage {
        try await pool.runIfActive {
            defer { VipsRuntime.releaseThreadState() }
            return try RenderPipeline.render(source, filters: filters, output: output, limits: limits)
        }
    }

    /// `RenderPipeline.transform` on one of the pool's threads.
    package func transform(_ source: [UInt8], _ transform: ImageTransform, limits: SourceLimits = SourceLimits()) async throws -> TransformedImage {
        try await pool.runIfActive {
            defer { VipsRuntime.releaseThreadState() }
            return try RenderPipeline.transform(source, transform, limits: limits)
        }
    }

    package func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Lets running renders finish and stops the threads; later renders fail.
    package func shutdown() async throws {
        try await pool.shutdownGracefully()
    }
}
