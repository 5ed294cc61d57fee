// swift-tools-version: 6.1
import PackageDescription

// MARK: - Dependencies

let hummingbird = Target.Dependency.product(name: "Hummingbird", package: "hummingbird")
let mustache = Target.Dependency.product(name: "Mustache", package: "swift-mustache")
let cryptoExtras = Target.Dependency.product(name: "_CryptoExtras", package: "swift-crypto")
let httpTypes = Target.Dependency.product(name: "HTTPTypes", package: "swift-http-types")
let postgresNIO = Target.Dependency.product(name: "PostgresNIO", package: "postgres-nio")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let metrics = Target.Dependency.product(name: "Metrics", package: "swift-metrics")
let prometheus = Target.Dependency.product(name: "Prometheus", package: "swift-prometheus")
let serviceLifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let unixSignals = Target.Dependency.product(name: "UnixSignals", package: "swift-service-lifecycle")
let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let crypto = Target.Dependency.product(name: "Crypto", package: "swift-crypto")
let nioSSL = Target.Dependency.product(name: "NIOSSL", package: "swift-nio-ssl")
let asyncHTTPClient = Target.Dependency.product(name: "AsyncHTTPClient", package: "async-http-client")
let hummingbirdTesting = Target.Dependency.product(name: "HummingbirdTesting", package: "hummingbird")
let hummingbirdCore = Target.Dependency.product(name: "HummingbirdCore", package: "hummingbird")
let yams = Target.Dependency.product(name: "Yams", package: "Yams")
let nioPosix = Target.Dependency.product(name: "NIOPosix", package: "swift-nio")
let nioCore = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let nioFoundation = Target.Dependency.product(name: "NIOFoundationCompat", package: "swift-nio")
let nioHTTP1 = Target.Dependency.product(name: "NIOHTTP1", package: "swift-nio")
let webSocket = Target.Dependency.product(name: "HummingbirdWebSocket", package: "hummingbird-websocket")
let nioWebSocket = Target.Dependency.product(name: "NIOWebSocket", package: "swift-nio")
let nioHTTPTypes = Target.Dependency.product(name: "NIOHTTPTypes", package: "swift-nio-extras")
let bcrypt = Target.Dependency.product(name: "HummingbirdBcrypt", package: "hummingbird-auth")
let nioHTTP2 = Target.Dependency.product(name: "NIOHTTP2", package: "swift-nio-http2")
let x509 = Target.Dependency.product(name: "X509", package: "swift-certificates")
let asn1 = Target.Dependency.product(name: "SwiftASN1", package: "swift-asn1")

// MARK: - Services

/// Declares one Splash service alike: the executable `Services/<module>` (its SQL migrations under
/// `Migrations/` are package resources) and its test target `Tests/<module>Tests`, which holds the
/// service's `ContractTests` suite (`make contract SERVICE=<executable>`).
///
/// `Tests/DeploymentTests` reads the executables declared here and checks that each one has a
/// docker-compose service and a `splash up` entry, so every service must be declared through it.
func service(
    _ executable: String,
    module: String,
    dependencies: [Target.Dependency] = [],
    testDependencies: [Target.Dependency] = [],
    testResources: [Resource] = [],
    testExclude: [String] = [],
    extraResources: [Resource] = [],
    ownsSchema: Bool = true
) -> (product: Product, targets: [Target]) {
    // A service that owns a schema has SQL migrations; the gateway has none. Every service has its
    // README and its HTTP contract (the gateway's: what it answers itself).
    let target = Target.executableTarget(
        name: module,
        dependencies: ["ServiceKit"] + (ownsSchema ? ["Database"] : []) + dependencies,
        path: "Services/\(module)",
        exclude: ["README.md", "openapi.yaml"],
        resources: (ownsSchema ? [.copy("Migrations")] : []) + extraResources
    )
    let tests = Target.testTarget(
        name: "\(module)Tests",
        dependencies: [.target(name: module), "TestSupport"] + testDependencies,
        path: "Tests/\(module)Tests",
        exclude: testExclude,
        resources: testResources
    )
    return (.executable(name: executable, targets: [module]), [target, tests])
}

let services: [(product: Product, targets: [Target])] = [
    service(
        "gateway",
        module: "Gateway",
        dependencies: [
            "RealtimeWire", "HTTPEdge",
            "Identity", "KeySetClient", "EventBus", "Kafka", "Contracts", "AsyncSignals", "RoadNetwork", asyncHTTPClient, crypto, hummingbird,
            webSocket, httpTypes, nioCore, nioPosix, nioHTTP1, nioHTTPTypes, nioSSL, nioWebSocket, nioFoundation, logging, metrics, serviceLifecycle,
        ],
        testDependencies: [
            "RealtimeWire", "HTTPEdge", "PlainWebSocket",
            "Identity", "ServiceKit", "EventBus", "Kafka", "Contracts", "LocalStack", "RoadNetwork", asyncHTTPClient, hummingbird, httpTypes, crypto,
            nioCore, nioPosix, nioHTTP1, nioFoundation, serviceLifecycle, logging,
        ],
        testExclude: ["console_check.py", "presence_check.py"],
        extraResources: [.copy("Console/Assets")],
        ownsSchema: false
    ),
    service(
        "photo-catalog",
        module: "PhotoCatalog",
        dependencies: [
            "ServiceAssembly",
            "KeySetClient", "Identity", "EventBus", "Kafka", "Contracts", "AsyncSignals", "ResourceAPI", asyncHTTPClient, crypto, hummingbird,
            httpTypes, nioCore, nioPosix, nioHTTP1, postgresNIO, logging, metrics, serviceLifecycle,
        ],
        testDependencies: [
            "Identity", "ServiceKit", "Database", "EventBus", "Contracts", "LocalStack", asyncHTTPClient, hummingbird, httpTypes, nioCore,
            postgresNIO, logging, yams,
        ],
        extraResources: [.copy("Fixtures")]
    ),
    service(
        "edit-render",
        module: "EditRender",
        dependencies: [
            "ServiceAssembly",
            "Imaging", "Blobs", "S3Blobs", "ResourceAPI", "CatalogClient", "KeySetClient", "Identity", "EventBus", "Kafka", "Contracts",
            asyncHTTPClient, crypto, hummingbird, httpTypes, nioCore, nioPosix, nioFoundation, postgresNIO, logging, metrics, serviceLifecycle,
        ],
        testDependencies: [
            "Imaging", "Identity", "ServiceKit", "Database", "EventBus", "Kafka", "Contracts", "LocalStack", "S3Blobs", asyncHTTPClient, hummingbird,
            httpTypes, nioCore, nioHTTP1, postgresNIO, logging, serviceLifecycle, yams,
        ],
        testResources: [.copy("Fixtures")]
    ),
    service(
        "social",
        module: "Social",
        dependencies: [
            "ServiceAssembly",
            "Multipart",
            "DataAPI", "Blobs", "S3Blobs", "ResourceAPI", "CatalogClient", "Imaging", "KeySetClient", "Identity", "EventBus", "Kafka", "Contracts",
            asyncHTTPClient, crypto, hummingbird, httpTypes, nioCore, nioPosix, postgresNIO, logging, metrics, serviceLifecycle,
        ],
        testDependencies: [
            "Blobs", "S3Blobs", "ResourceAPI", "Imaging", "Identity", "ServiceKit", "Database", "EventBus", "Kafka", "Contracts", "LocalStack",
            asyncHTTPClient, hummingbird, httpTypes, nioCore, nioHTTP1, postgresNIO, logging, serviceLifecycle, yams,
        ],
        testResources: [.copy("Fixtures")]
    ),
    service(
        "tracking",
        module: "Tracking",
        dependencies: [
            "ServiceAssembly",
            "PositionReports",
            "DataAPI", "RoadNetwork", "ResourceAPI", "KeySetClient", "Identity", "EventBus", "Kafka", "Contracts", asyncHTTPClient, crypto,
            hummingbird, httpTypes, nioCore, nioPosix, postgresNIO, logging, metrics, serviceLifecycle,
        ],
        testDependencies: [
            "RoadNetwork", "ResourceAPI", "Identity", "ServiceKit", "Database", "EventBus", "Kafka", "Contracts", "LocalStack", asyncHTTPClient,
            hummingbird, httpTypes, nioCore, nioHTTP1, nioFoundation, postgresNIO, logging, serviceLifecycle, yams,
        ],
        testResources: [.copy("Fixtures")]
    ),
    service(
        "auth",
        module: "Auth",
        dependencies: [
            "ServiceAssembly", "Mail", "AsyncSignals", "KeySetClient",
            "DataAPI", "Identity", "EventBus", "Kafka", "Contracts", asyncHTTPClient, bcrypt, crypto, cryptoExtras, mustache, nioCore, nioPosix,
            hummingbird, httpTypes, postgresNIO, logging, metrics, serviceLifecycle,
        ],
        testDependencies: [
            "Mail", "Identity", "EventBus", "Kafka", "Contracts", "ServiceKit", "Database", "LocalStack", asyncHTTPClient, crypto, cryptoExtras,
            hummingbird, httpTypes, postgresNIO, logging, yams,
        ],
        testResources: [.copy("Fixtures")],
        extraResources: [.copy("MailTemplates")]
    ),
    service(
        "notify",
        module: "Notify",
        dependencies: [
            "ServiceAssembly", "Mail",
            "ResourceAPI", "KeySetClient", "Identity", "EventBus", "Kafka", "Contracts", "AsyncSignals", asyncHTTPClient, crypto, hummingbird,
            httpTypes, nioCore, nioPosix, nioHTTP1, nioSSL, nioFoundation, postgresNIO, logging, metrics, serviceLifecycle,
        ],
        testDependencies: [
            "Mail", "Identity", "ServiceKit", "Database", "EventBus", "Kafka", "Contracts", "LocalStack", asyncHTTPClient, hummingbird, httpTypes,
            crypto,
            nioCore, postgresNIO, logging, serviceLifecycle, yams,
        ]
    ),
]

// MARK: - Package

let package = Package(
    name: "splash",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "splash", targets: ["Splash"]),
        .executable(name: "tracking-simulator", targets: ["TrackingSimulator"]),
    ] + services.map(\.product),
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"5.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.34.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.0"),
    ],
    targets: [
        // Libraries every service stands on.
        .target(
            name: "ServiceKit",
            dependencies: [
                "AsyncSignals", hummingbird, hummingbirdCore, httpTypes, nioCore, nioPosix, logging, metrics, prometheus, serviceLifecycle,
            ],
            path: "Shared/ServiceKit"
        ),
        .target(
            name: "Database",
            dependencies: ["ServiceKit", postgresNIO, nioSSL, crypto, logging],
            path: "Shared/Database"
        ),
        // Access tokens: ES256 JWTs, their claims, JWKS. Only swift-crypto, so every service and
        // the gateway can verify tokens without pulling in the server stack.
        .target(name: "Identity", dependencies: [crypto], path: "Shared/Identity"),
        // auth's published key set, fetched over HTTP and cached, and the 401s of a bad bearer token:
        // how a service verifies the tokens its requests carry.
        .target(
            name: "KeySetClient",
            dependencies: ["Contracts", "Identity", "ServiceKit", asyncHTTPClient, httpTypes, nioCore, nioFoundation, logging, serviceLifecycle],
            path: "Shared/KeySetClient"
        ),
        // The blob store the services share (a folder now) and the signed links to private blobs.
        .target(name: "Blobs", dependencies: ["ServiceKit", crypto, nioCore], path: "Shared/Blobs"),
        // The blob store on an S3-protocol server (AWS, MinIO): SigV4, multipart uploads, retries.
        .target(name: "S3Blobs", dependencies: ["Blobs", "ServiceKit", asyncHTTPClient, crypto, nioCore, nioHTTP1, logging], path: "Shared/S3Blobs"),
        // The road network of central Helsinki (© OpenStreetMap contributors, ODbL) and routes over it.
        .target(
            name: "RoadNetwork",
            path: "Shared/RoadNetwork",
            exclude: ["Resources/SOURCE.md", "Resources/extract-roads.py"],
            resources: [.copy("Resources/helsinki-drive.json")]
        ),
        // The scaffolding of a service's resource API: JSON bodies, ETags, keyset pages,
        // idempotency keys.
        .target(
            name: "ResourceAPI",
            dependencies: ["ServiceKit", "Contracts", "Identity", crypto, hummingbird, httpTypes, nioCore],
            path: "Shared/ResourceAPI"
        ),
        // The PostgREST subset of `/rest/v1`: queries parsed, rendered as SQL over allow-listed
        // tables, answered in PostgREST's shape. Knows no service; each mounts its own tables.
        .target(
            name: "DataAPI",
            dependencies: ["ServiceKit", "Database", "Identity", hummingbird, httpTypes, nioCore, postgresNIO, logging],
            path: "Shared/DataAPI"
        ),
        // photo-catalog as other services reach it: a photo by id, reports of a photo's use.
        .target(name: "CatalogClient", dependencies: ["Contracts", asyncHTTPClient, logging, nioCore, nioFoundation], path: "Shared/CatalogClient"),
        // Signals tasks wait for (a value that arrives once, a wake-up call); no dependencies.
        .target(name: "AsyncSignals", path: "Shared/AsyncSignals"),
        // The byte parsers hostile input meets first, each in a library its service, its tests and
        // its fuzz target all build (`make test-fuzz`), and nothing heavier than it needs.
        // HTTP/1.1 as the gateway's edge reads it: request and answer heads, body framing, and the
        // state machine of a client connection's proxied calls.
        .target(name: "HTTPEdge", dependencies: [nioCore, nioPosix, httpTypes], path: "Shared/HTTPEdge"),
        // Supabase Realtime's frames (Phoenix messages, broadcasts) and a realtime client's queue.
        .target(name: "RealtimeWire", dependencies: ["Contracts", "Identity", nioCore], path: "Shared/RealtimeWire"),
        // A small RFC 6455 client (tests, benchmarks, the tracking simulator's realtime presence).
        .target(name: "PlainWebSocket", dependencies: [crypto, nioCore, nioPosix], path: "Shared/PlainWebSocket"),
        // `multipart/form-data` upload bodies (Storage's uploads).
        .target(name: "Multipart", path: "Shared/Multipart"),
        // A driver's batch of positions, read in one pass.
        .target(name: "PositionReports", dependencies: ["Contracts", "RoadNetwork"], path: "Shared/PositionReports"),
        .target(name: "Contracts", path: "Shared/Contracts", exclude: ["Schemas", "Released", "asyncapi.yaml"]),
        .systemLibrary(
            name: "CRdKafka",
            path: "Shared/CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            path: "Shared/CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // Mail with a plain-text and an HTML part, a service's transactional mail outbox and its
        // relay, and SMTP through libcurl (STARTTLS required but to loopback); or the catcher.
        .target(
            name: "Mail",
            dependencies: ["CCurl", "Database", "ServiceKit", "AsyncSignals", nioPosix, postgresNIO, logging, serviceLifecycle],
            path: "Shared/Mail",
            resources: [.copy("Migrations")]
        ),
        .systemLibrary(
            name: "CVips",
            path: "Shared/CVips",
            pkgConfig: "vips",
            providers: [.apt(["libvips-dev"])]
        ),
        // The render's pixel loops in C: the Lanczos-3 resampler and the fused point filters.
        // Optimised in debug builds too (tests render hundreds of images); no errno from sqrtf,
        // so its loops vectorise.
        .target(
            name: "PixelKernels",
            path: "Shared/PixelKernels",
            cSettings: [.unsafeFlags(["-O2", "-fno-math-errno"])]
        ),
        // JPEG and WebP straight between bytes and pixels in memory (libjpeg-turbo and libwebp,
        // which libvips-dev brings), for the render's common case without libvips' worker hand-offs.
        .target(
            name: "Codecs",
            path: "Shared/Codecs",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("jpeg"), .linkedLibrary("webp")]
        ),
        // libvips behind Swift types that own every libvips object: edit-render's filters, the
        // render pipeline and its byte budget, a renderer on its own threads.
        .target(
            name: "Imaging",
            dependencies: ["CVips", "Codecs", "PixelKernels", "Contracts", "Blobs", nioPosix, serviceLifecycle],
            path: "Shared/Imaging"
        ),
        .target(
            name: "Kafka",
            dependencies: ["CRdKafka", "Contracts", "AsyncSignals", logging, metrics, serviceLifecycle],
            path: "Shared/Kafka"
        ),
        .target(
            name: "EventBus",
            dependencies: [
                "Kafka", "Contracts", "Database", "ServiceKit", "AsyncSignals", "Identity", postgresNIO, logging, metrics, serviceLifecycle,
            ],
            path: "Shared/EventBus",
            resources: [.copy("Migrations")]
        ),
        // What every service that keeps state and speaks on Kafka is assembled from alike: its
        // standard settings, its pool, producer, relay, outbox, inbox and consumers, and the HTTP
        // client it calls other services with.
        .target(
            name: "ServiceAssembly",
            dependencies: [
                "ServiceKit", "Database", "EventBus", "Kafka", "Contracts", "KeySetClient", "ResourceAPI", asyncHTTPClient, nioPosix, postgresNIO,
                logging, serviceLifecycle,
            ],
            path: "Shared/ServiceAssembly"
        ),
        // The local stack: Postgres clusters, the service catalog and the process supervisor.
        .target(
            name: "LocalStack",
            dependencies: ["Database", "Blobs", "ServiceKit", "AsyncSignals", postgresNIO, crypto, logging],
            path: "Shared/LocalStack"
        ),
        .executableTarget(
            name: "TrackingSimulator",
            dependencies: [
                "RoadNetwork", "Contracts", "ServiceKit", "PlainWebSocket", "RealtimeWire", "Identity", argumentParser, asyncHTTPClient, crypto,
                nioCore,
                nioPosix, nioHTTP1, nioFoundation,
                logging,
            ],
            path: "Tools/TrackingSimulator"
        ),
        .executableTarget(
            name: "Splash",
            dependencies: [
                "LocalStack", "Database", "Blobs", "S3Blobs", "Kafka", "EventBus", "Contracts", "ServiceKit", "Identity", argumentParser,
                unixSignals, logging, postgresNIO,
            ],
            path: "Tools/Splash"
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "Identity", "LocalStack", "S3Blobs", "Kafka", "EventBus", "Contracts", "Database", "ServiceKit", "AsyncSignals", "PlainWebSocket",
                hummingbird,
                hummingbirdCore, httpTypes, asyncHTTPClient, postgresNIO, serviceLifecycle, logging, crypto, nioCore, nioHTTP1, nioPosix, yams,
                nioHTTP2, nioSSL, x509, asn1,
            ],
            path: "Shared/TestSupport"
        ),

        .testTarget(
            name: "ServiceKitTests",
            dependencies: ["ServiceKit", "TestSupport", hummingbird, hummingbirdTesting, serviceLifecycle],
            path: "Tests/ServiceKitTests"
        ),
        .testTarget(
            name: "DatabaseTests",
            dependencies: ["Database", "ServiceKit", "TestSupport", postgresNIO],
            path: "Tests/DatabaseTests",
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "LocalStackTests",
            dependencies: ["LocalStack", "TestSupport", "ServiceKit", "Kafka", "Contracts"],
            path: "Tests/LocalStackTests"
        ),
        .executableTarget(
            name: "EventProbe",
            dependencies: ["EventBus", "Kafka", "Contracts", "Database", "TestSupport", postgresNIO, logging, serviceLifecycle],
            path: "Tools/EventProbe"
        ),
        .testTarget(
            name: "EventBusTests",
            dependencies: [
                "EventBus", "EventProbe", "Kafka", "Contracts", "Database", "ServiceKit", "TestSupport", postgresNIO, logging, serviceLifecycle,
            ],
            path: "Tests/EventBusTests"
        ),
        .executableTarget(
            name: "EventBusBenchmark",
            dependencies: ["EventBus", "Kafka", "Contracts", "LocalStack", "ServiceKit", "TestSupport", postgresNIO, logging, serviceLifecycle],
            path: "Benchmarks/EventBus"
        ),
        .executableTarget(
            name: "AuthBenchmark",
            dependencies: [
                "Identity", "KeySetClient", "LocalStack", "ServiceKit", "TestSupport", asyncHTTPClient, bcrypt, crypto, logging, nioHTTP1,
            ],
            path: "Benchmarks/Auth"
        ),
        .executableTarget(
            name: "GatewayBenchmark",
            dependencies: [
                "EventBus", "Kafka", "Contracts", "Identity", "LocalStack", "ServiceKit", "TestSupport", "PlainWebSocket", asyncHTTPClient, logging,
            ],
            path: "Benchmarks/Gateway"
        ),
        .executableTarget(
            name: "PresenceBenchmark",
            dependencies: ["Kafka", "LocalStack", "ServiceKit", "TestSupport", asyncHTTPClient, logging],
            path: "Benchmarks/Presence"
        ),
        .executableTarget(
            name: "RealtimeBenchmark",
            dependencies: ["EventBus", "Kafka", "Contracts", "Identity", "LocalStack", "ServiceKit", "TestSupport", asyncHTTPClient, logging],
            path: "Benchmarks/Realtime"
        ),
        .executableTarget(
            name: "WebSocketFloor",
            dependencies: [nioCore, nioPosix, nioHTTP1, nioWebSocket],
            path: "Benchmarks/WebSocketFloor"
        ),
        .executableTarget(
            name: "CatalogBenchmark",
            dependencies: ["LocalStack", "ServiceKit", "TestSupport", asyncHTTPClient, logging],
            path: "Benchmarks/Catalog"
        ),
        .executableTarget(
            name: "TrackingBenchmark",
            dependencies: ["Contracts", "LocalStack", "ServiceKit", "TestSupport", asyncHTTPClient, nioCore, nioHTTP1, nioFoundation, logging],
            path: "Benchmarks/Tracking"
        ),
        .executableTarget(
            name: "RoutingBenchmark",
            dependencies: ["RoadNetwork", "ServiceKit", "TestSupport"],
            path: "Benchmarks/Routing"
        ),
        .executableTarget(
            name: "S3Benchmark",
            dependencies: ["S3Blobs", "Blobs", "LocalStack", "TestSupport", asyncHTTPClient, logging],
            path: "Benchmarks/S3"
        ),
        .executableTarget(
            name: "DataAPIBenchmark",
            dependencies: ["DataAPI", "TestSupport", httpTypes],
            path: "Benchmarks/DataAPI"
        ),
        .executableTarget(
            name: "ErasureBenchmark",
            dependencies: [
                "Contracts", "EventBus", "Identity", "Kafka", "LocalStack", "ServiceKit", "TestSupport", asyncHTTPClient, logging, nioCore, nioHTTP1,
            ],
            path: "Benchmarks/Erasure"
        ),
        .executableTarget(
            name: "NotifyBenchmark",
            dependencies: ["Contracts", "EventBus", "Kafka", "LocalStack", "ServiceKit", "TestSupport", postgresNIO, logging, serviceLifecycle],
            path: "Benchmarks/Notify"
        ),
        .executableTarget(
            name: "MailBenchmark",
            dependencies: ["Mail", "Database", "AsyncSignals", "LocalStack", "TestSupport", postgresNIO, logging],
            path: "Benchmarks/Mail"
        ),
        .executableTarget(
            name: "SocialBenchmark",
            dependencies: ["LocalStack", "ServiceKit", "TestSupport", asyncHTTPClient, postgresNIO, logging],
            path: "Benchmarks/Social"
        ),
        .executableTarget(
            name: "UploadBenchmark",
            dependencies: ["LocalStack", "TestSupport", asyncHTTPClient, nioCore, nioHTTP1],
            path: "Benchmarks/Uploads"
        ),
        .executableTarget(
            name: "ThumbnailBenchmark",
            dependencies: ["Imaging", "LocalStack", "TestSupport", asyncHTTPClient, nioCore],
            path: "Benchmarks/Thumbnails"
        ),
        .executableTarget(
            name: "RenderBenchmark",
            dependencies: ["Imaging", "Contracts", "LocalStack", "ServiceKit", "TestSupport"],
            path: "Benchmarks/Render"
        ),
        .testTarget(
            name: "ContractsTests",
            dependencies: ["Contracts", "LocalStack", "TestSupport", yams],
            path: "Tests/ContractsTests",
            exclude: ["validate_events.py", "check_compatibility.py", "check_openapi_examples.py"]
        ),
        .testTarget(
            name: "ImagingTests",
            dependencies: ["Imaging", "Blobs", "PixelKernels", "Contracts", "TestSupport"],
            path: "Tests/ImagingTests",
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "KeySetClientTests",
            dependencies: ["KeySetClient", "Identity", "TestSupport", asyncHTTPClient, hummingbird, logging],
            path: "Tests/KeySetClientTests"
        ),
        .testTarget(
            name: "RoadNetworkTests",
            dependencies: ["RoadNetwork"],
            path: "Tests/RoadNetworkTests"
        ),
        .testTarget(
            name: "BlobsTests",
            dependencies: ["Blobs", nioCore],
            path: "Tests/BlobsTests"
        ),
        .testTarget(
            name: "S3BlobsTests",
            dependencies: ["S3Blobs", "Blobs", "LocalStack", "TestSupport", asyncHTTPClient, crypto, nioCore, logging],
            path: "Tests/S3BlobsTests"
        ),
        .testTarget(
            name: "ResourceAPITests",
            dependencies: ["ResourceAPI", "ServiceKit", hummingbird, hummingbirdTesting, httpTypes, nioCore],
            path: "Tests/ResourceAPITests"
        ),
        .testTarget(
            name: "DataAPITests",
            dependencies: ["DataAPI", "ServiceKit", "Identity", "TestSupport", httpTypes, postgresNIO],
            path: "Tests/DataAPITests"
        ),
        .testTarget(
            name: "HTTPEdgeTests",
            dependencies: ["HTTPEdge", httpTypes, nioCore],
            path: "Tests/HTTPEdgeTests"
        ),
        .testTarget(
            name: "PositionReportsTests",
            dependencies: ["PositionReports", "ResourceAPI", "ServiceKit", "Identity", "Contracts", "RoadNetwork"],
            path: "Tests/PositionReportsTests"
        ),
        .testTarget(
            name: "IdentityTests",
            dependencies: ["Identity"],
            path: "Tests/IdentityTests"
        ),
        .testTarget(
            name: "KafkaTests",
            dependencies: ["Kafka", "Contracts", "ServiceKit", "TestSupport", "AsyncSignals", logging],
            path: "Tests/KafkaTests"
        ),
        .testTarget(
            name: "SplashTests",
            dependencies: [
                "Splash", "LocalStack", "ServiceKit", "TestSupport", "Contracts", "EventBus", "Kafka", "AsyncSignals", "Identity", "Blobs", "S3Blobs",
                asyncHTTPClient, postgresNIO, logging,
            ],
            path: "Tests/SplashTests"
        ),
        // The running system under faults: services as processes on a Postgres and a broker of the
        // test's own, taken down while they work (`make test-system`).
        .testTarget(
            name: "SystemTests",
            dependencies: [
                "TestSupport", "LocalStack", "Kafka", "Contracts", "Identity", "EventBus", "ServiceKit", "Database", asyncHTTPClient, nioHTTP1,
                postgresNIO, logging, serviceLifecycle,
            ],
            path: "Tests/SystemTests"
        ),
        .testTarget(
            name: "MailTests",
            dependencies: ["Mail", "Database", "ServiceKit", "TestSupport", postgresNIO, logging, serviceLifecycle],
            path: "Tests/MailTests"
        ),
        .testTarget(
            name: "DeploymentTests",
            dependencies: [
                "Auth", "Gateway", "PhotoCatalog", "EditRender", "Social", "Tracking", "Notify", "Mail", "S3Blobs", "Identity", "Contracts",
                "Database",
                "EventBus",
                "LocalStack", "ServiceKit", "TestSupport", postgresNIO, logging, yams,
            ],
            path: "Tests/DeploymentTests"
        ),
    ] + services.flatMap(\.targets)
)

// libFuzzer targets (`make test-fuzz`), declared only when SPLASH_FUZZ is set: built with
// `-sanitize=fuzzer,address` into .build-fuzz (and linked by lld: gold fails on them), each
// calls libFuzzer's driver from its own entry point (FuzzDriver, C); without libFuzzer's runtime
// they would not link.
if Context.environment["SPLASH_FUZZ"] != nil {
    package.targets.append(.target(name: "FuzzDriver", path: "Fuzz/Driver"))
    // Each depends on the library whose parser it reads, as its service does.
    let targets: [(String, [Target.Dependency])] = [
        ("Tokens", ["Identity"]), ("DataQuery", ["DataAPI"]), ("ImageHeader", ["Imaging"]),
        ("Multipart", ["Multipart"]), ("Phoenix", ["RealtimeWire", "Identity", nioCore]), ("HTTPHead", ["HTTPEdge", nioCore]),
        ("Positions", ["PositionReports"]), ("Transform", ["Imaging"]),
    ]
    for (name, dependencies) in targets {
        package.targets.append(
            .executableTarget(
                name: "Fuzz\(name)",
                dependencies: ["FuzzDriver"] + dependencies,
                path: "Fuzz/\(name)",
                exclude: ["corpus"],
                linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
            )
        )
    }
}
