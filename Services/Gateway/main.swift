import ServiceKit

await ServiceMain.run("gateway", configuration: GatewayConfiguration.self, build: buildApplication)
