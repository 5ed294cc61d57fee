import AsyncSignals
import ServiceLifecycle

/// `services`, each made to start only once the one before it has started (its `run()` entered),
/// and a signal of the last one's start. A `ServiceGroup` runs its services' `run()` at once on
/// whichever threads are free, so a relay that leases a connection at its start could call on a
/// `PostgresClient` whose `run()` had not been called yet (PostgresNIO warns of it, and the lease
/// waits). In order, everything may use what comes before it in the list from its first line.
package func startingInOrder(_ services: [any Service]) -> (services: [any Service], allStarted: OneShot<Void>) {
    var previous: OneShot<Void>?
    var ordered: [any Service] = []
    for service in services {
        let started = OneShot<Void>()
        ordered.append(StartsAfter(service: service, previous: previous, started: started))
        previous = started
    }
    let allStarted =
        previous
        ?? {
            let none = OneShot<Void>()
            none.complete(())
            return none
        }()
    return (ordered, allStarted)
}

/// A service that starts once `previous` has, and says so before it runs.
private struct StartsAfter: Service, CustomStringConvertible {
    let service: any Service
    let previous: OneShot<Void>?
    let started: OneShot<Void>

    func run() async throws {
        await previous?.value()
        // Entering the service's `run()` follows at once on this task, with nothing to wait for
        // in between: a `PostgresClient` marks itself running as the first thing it does.
        started.complete(())
        try await service.run()
    }

    var description: String { String(describing: service) }
}
