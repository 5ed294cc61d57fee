import ServiceKit

// The gateway moves bytes between sockets and never blocks: its tasks run on the event loops.
await ServiceMain.run("gateway", configuration: GatewayConfiguration.self, tasksOnEventLoops: true, build: buildApplication)
