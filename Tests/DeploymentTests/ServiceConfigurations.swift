import ServiceKit

@testable import Auth
@testable import EditRender
@testable import Gateway
@testable import Notify
@testable import PhotoCatalog
@testable import Social
@testable import Tracking

/// The configuration type of every service executable, by executable name. A service declared in
/// Package.swift must be listed here, so its docker-compose environment is checked against what its
/// configuration requires.
let serviceConfigurations: [String: any ServiceConfiguration.Type] = [
    "auth": AuthConfiguration.self,
    "gateway": GatewayConfiguration.self,
    "photo-catalog": PhotoCatalogConfiguration.self,
    "edit-render": EditRenderConfiguration.self,
    "social": SocialConfiguration.self,
    "tracking": TrackingConfiguration.self,
    "notify": NotifyConfiguration.self,
]
