import ServiceKit

await ServiceMain.run("tracking", configuration: TrackingConfiguration.self, build: buildApplication)
