import NIOCore
import NIOPosix

/// A task executor that runs each job on the NIO event loop that made it runnable, or on one of
/// the group's loops when it was woken from elsewhere.
///
/// Hummingbird hands each request to a task; by default that task runs on Swift's global
/// executor, so every read and write of a socket crosses between an event-loop thread and a
/// global-pool thread (a wake-up each way). With this executor preferred, a task woken by its
/// connection's loop continues on that loop, and an upstream call made from there (which prefers
/// the current loop) stays on it too.
///
/// The jobs run on event-loop threads, so they must not block: what a service runs this way must
/// never wait on a lock held for long, a disk or a CPU-heavy computation (bcrypt, image work). A
/// part that may block opts out with `withTaskExecutorPreference(globalConcurrentExecutor)`.
package final class EventLoopTaskExecutor: TaskExecutor {
    private let group: MultiThreadedEventLoopGroup

    package init(group: MultiThreadedEventLoopGroup = .singleton) {
        self.group = group
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? group.next()
        loop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
