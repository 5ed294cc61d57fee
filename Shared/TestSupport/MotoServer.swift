import AsyncHTTPClient
import Foundation
import LocalStack
import Logging
import S3Blobs

/// An S3-protocol server on loopback for tests: moto (PyPI `moto[server]`, which `make test`
/// installs), a server nobody here wrote. Each instance is its own process and port; `stop()` kills
/// it at once (a server going away mid-request), `start()` brings it back on the same port, empty.
package final class MotoServer: @unchecked Sendable {
    package private(set) var port: Int
    private let server = KillableServer()

    package var endpoint: URL { URL(string: "http://127.0.0.1:\(port)")! }
    /// With `authenticating`: the keys of the one user allowed in (every request must be signed
    /// with them, as on AWS), and the bucket made for them.
    package private(set) var credentials: (accessKeyID: String, secret: String)?
    package let bucket = "splash-\(UUID().uuidString.prefix(8).lowercased())"
    private let authenticating: Bool

    /// - Parameter authenticating: whether requests must be signed with a user's real keys (moto's
    ///   IAM checks on); otherwise any keys are taken.
    /// - Throws: `KillableServerExited` when moto could not start on three free ports in a row.
    package init(authenticating: Bool = false) async throws {
        port = freePort()
        self.authenticating = authenticating
        var attempt = 1
        while true {
            do {
                try await start()
                break
            } catch is KillableServerExited where attempt < 3 {
                // Another test's server took the port before moto bound it.
                attempt += 1
                port = freePort()
            }
        }
        if authenticating { try await makeUser() }
    }

    /// The user, its keys and the bucket, made with boto3 while moto still lets the first four
    /// requests in unsigned (`INITIAL_NO_AUTH_ACTION_COUNT`).
    private func makeUser() async throws {
        let setup = """
            import boto3, json, sys
            kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
            iam = boto3.client("iam", **kw)
            iam.create_user(UserName="splash")
            iam.put_user_policy(UserName="splash", PolicyName="all", PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
            key = iam.create_access_key(UserName="splash")["AccessKey"]
            boto3.client("s3", **kw).create_bucket(Bucket=sys.argv[2])
            print(key["AccessKeyId"], key["SecretAccessKey"])
            """
        let output = try await ProcessCommand(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", setup, endpoint.absoluteString, bucket])
            .runToCompletion()
        let words = output.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard words.count >= 2 else { throw MotoSetupFailed(output: output) }
        credentials = (words[words.count - 2], words[words.count - 1])
    }

    package func start() async throws {
        try await server.start(
            "moto_server",
            ["python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)],
            port: port,
            environment: authenticating ? ["INITIAL_NO_AUTH_ACTION_COUNT": "4"] : nil
        )
    }

    /// Whether moto is up (not killed, not crashed).
    package var isRunning: Bool { server.isRunning }

    /// Kills the server (SIGKILL: no goodbye to the connections it has).
    package func stop() {
        server.kill()
    }
}

struct MotoSetupFailed: Error {
    var output: String
}

extension MotoServer {
    /// One client for every store the tests make on moto (never shut down, as HTTPClient.shared).
    private static let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: S3BlobStore.httpConfiguration)
    /// The keys stores and services sign with here (any are taken unless the server authenticates).
    private static let keys = (id: "moto-test", secret: "moto-test-secret")

    /// A store on `bucket` of this server, the bucket made when missing.
    package func store(bucket: String) async throws -> S3BlobStore {
        var logger = Logger(label: "moto-store")
        logger.logLevel = .error
        let settings = S3Settings(
            endpoint: endpoint,
            region: "us-east-1",
            bucket: bucket,
            accessKeyID: Self.keys.id,
            secretAccessKey: Self.keys.secret
        )
        let store = S3BlobStore(settings: settings, http: Self.http, logger: logger)
        try await store.createBucketIfMissing()
        return store
    }

    /// What a service reads to keep its blobs in `bucket` here (`BLOB_STORE=s3`).
    package func blobSettings(bucket: String) -> [String: String] {
        [
            "BLOB_STORE": "s3", "S3_ENDPOINT": endpoint.absoluteString, "S3_BUCKET": bucket, "S3_ACCESS_KEY_ID": Self.keys.id,
            "S3_SECRET_ACCESS_KEY": Self.keys.secret,
        ]
    }
}
