import ServiceKit

await ServiceMain.run("photo-catalog", configuration: PhotoCatalogConfiguration.self, build: buildApplication)
