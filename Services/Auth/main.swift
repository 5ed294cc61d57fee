import ServiceKit

await ServiceMain.run("auth", configuration: AuthConfiguration.self, build: buildApplication)
