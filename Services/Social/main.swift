import ServiceKit

await ServiceMain.run("social", configuration: SocialConfiguration.self, build: buildApplication)
