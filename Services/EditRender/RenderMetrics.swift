import Metrics
import ServiceKit

/// edit-render's own metrics, beside ServiceKit's HTTP ones.
struct RenderMetrics: Sendable {
    private let renderSeconds: Timer
    private let renderedBytes: Recorder
    private let failures: Counter
    private let previews: Timer

    init(factory: any MetricsFactory) {
        renderSeconds = Timer(label: "render_job_duration_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
        renderedBytes = Recorder(label: "render_output_bytes", factory: factory)
        failures = Counter(label: "render_jobs_failed_total", factory: factory)
        previews = Timer(label: "render_preview_duration_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
    }

    func rendered(seconds duration: Duration, bytes: Int) {
        renderSeconds.recordNanoseconds(duration.totalNanoseconds)
        renderedBytes.record(bytes)
    }

    func failed() { failures.increment() }

    func preview(_ duration: Duration) {
        previews.recordNanoseconds(duration.totalNanoseconds)
    }
}
