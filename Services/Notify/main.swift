import ServiceKit

await ServiceMain.run("notify", configuration: NotifyConfiguration.self, build: buildApplication)
