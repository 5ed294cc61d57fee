import ServiceKit

await ServiceMain.run("photo-catalog", configuration: CatalogConfiguration.self, build: buildApplication)
