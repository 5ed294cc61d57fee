import AsyncSignals
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Works through the delivery queue: takes what is due, sends each to its channel (APNs, or the
/// local stack's sink), and records how it went — delivered, rejected (a device Apple no longer
/// knows is forgotten), retried with backoff until its expiry, or expired. Woken the moment a
/// consumer's transaction adds deliveries, and at least every `pollInterval` for retries.
struct Sender: Service {
    let queue: DeliveryQueue
    /// `nil` without an APNs key: everything goes to the sink.
    let apns: APNsClient?
    let wakeup: Wakeup
    let backoff: Backoff
    /// How many deliveries are sent at once (streams in flight on the APNs connection).
    let concurrency: Int
    let pollInterval: Duration
    /// How long the delivery log keeps a finished delivery.
    let logRetention: Duration
    let logger: Logger

    func run() async throws {
        var lastPurge = ContinuousClock.now - .seconds(3_600)
        await withGracefulShutdownHandler {
            while !Task.isShuttingDownGracefully {
                do {
                    let sent = try await sendDue()
                    if ContinuousClock.now - lastPurge > .seconds(600) {
                        try await queue.purge(finishedBefore: logRetention)
                        lastPurge = .now
                    }
                    if sent == 0 { await wakeup.wait(upTo: pollInterval) }
                } catch {
                    logger.warning("Delivery round failed; trying again", metadata: ["error": "\(String(reflecting: error))"])
                    try? await Task.sleep(for: pollInterval)
                }
            }
        } onGracefulShutdown: {
            wakeup.signal()
        }
    }

    /// Sends one batch of due deliveries, `concurrency` at a time, and records how each went in
    /// one statement.
    /// - Returns: how many it took.
    func sendDue() async throws -> Int {
        let due = try await queue.claim(limit: concurrency * 4)
        guard !due.isEmpty else { return 0 }
        let outcomes = try await withThrowingTaskGroup(of: (Delivery, DeliveryOutcome).self) { group in
            var next = due.makeIterator()
            for _ in 0..<concurrency {
                guard let delivery = next.next() else { break }
                group.addTask { (delivery, try await send(delivery)) }
            }
            var outcomes: [(delivery: Delivery, outcome: DeliveryOutcome)] = []
            while let finished = try await group.next() {
                outcomes.append(finished)
                if let delivery = next.next() { group.addTask { (delivery, try await send(delivery)) } }
            }
            return outcomes
        }
        try await queue.finish(outcomes)
        return due.count
    }

    /// One attempt at `delivery`: how it went.
    private func send(_ delivery: Delivery) async throws -> DeliveryOutcome {
        guard Date() < delivery.expiresAt else { return .expired }
        guard delivery.channel == .apns, let apns else { return .delivered(status: nil) }
        let answer = await apns.send(delivery)
        let (outcome, forgetDevice) = answer.outcome(attempts: delivery.attempts, backoff: backoff)
        if forgetDevice {
            try await queue.forget(device: delivery.deviceToken, unregisteredAt: answer.timestamp)
        }
        if case .rejected(let status, let reason) = outcome {
            logger.notice("APNs refused a notification", metadata: ["status": "\(status)", "reason": "\(reason)", "apns-id": "\(delivery.apnsID)"])
        }
        return outcome
    }
}
