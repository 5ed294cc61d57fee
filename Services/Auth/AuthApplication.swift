import AsyncHTTPClient
import AsyncSignals
import Contracts
import DataAPI
import Database
import EventBus
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Kafka
import KeySetClient
import Logging
import Mail
import PostgresNIO
import ServiceAssembly
import ServiceKit

/// The schema auth owns.
let authSchema = "auth"

/// Builds the auth service: applies its migrations (its own and the event bus's) and makes sure
/// its topic exists, then assembles the HTTP routes under `/auth/v1`, the Postgres pool, the Kafka
/// producer and the outbox relay, the mail relay, and the consumer of `tracking.restaurants`.
/// - Throws: when a migration does not apply or Kafka refuses to create the topic.
func buildApplication(_ config: AuthConfiguration, runtime: ServiceRuntime) async throws -> ServiceApplication<AppRequestContext> {
    let logger = runtime.logger
    let base = try await EventedService.prepare(
        "auth",
        schema: authSchema,
        migrations: try Migration.load(bundle: .module),
        topics: [TopicCatalog.authUsers] + ConsumerGroupCatalog.auth.topics,
        settings: config.standard,
        logger: logger
    )
    let client = base.client
    var parts = base.applicationParts(metrics: runtime.metrics)
    // Every auth request is a small JSON document; a large body is refused before it is read.
    parts.routePolicies = [
        RoutePolicy(pathPrefix: "/auth/v1", maxBodySize: 64 * 1024, timeout: config.standard.http.requestTimeout),
        RoutePolicy(pathPrefix: "/rest/v1", maxBodySize: 64 * 1024, timeout: config.standard.http.requestTimeout),
    ]

    try await PostgresClient.withStartupClient(config.standard.database.client, logger: logger) { client in
        try await MailOutbox.migrate(schema: authSchema, on: client, logger: logger)
    }
    let mailOutbox = try MailOutbox(schema: authSchema, wakeup: Wakeup())
    parts.services.append(MailRelay(outbox: mailOutbox, client: client, destination: config.mail.destination, logger: logger))
    let http = HTTPClient.standard(logger: logger)
    parts.services.append(HTTPClientService(client: http))
    let owners = RestaurantOwners(logger: logger)
    parts.services.append(
        base.consumer(group: config.consumerGroup, topics: ConsumerGroupCatalog.auth.topics, registry: RestaurantOwners.registry) {
            received,
            connection in
            try await owners.apply(received.event, on: connection)
        }
    )
    let routes = try AuthRoutes(config: config, client: client, http: http, outbox: base.outbox, mailOutbox: mailOutbox, logger: logger)
    let verifier = AccessTokenVerifier(keys: config.verificationKeys, issuer: config.issuer)
    let tables = AuthDataTables(
        client: client,
        accounts: routes.user.accounts,
        authenticator: routes.user.authenticator,
        publicURL: config.publicURL,
        logger: logger
    )
    let data = DataController(tables: tables.tables, logger: logger) { token throws(AccessTokenError) in
        try verifier.verify(token)
    }
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        routes.add(to: router.group("auth/v1"))
        data.addRoutes(to: router)
    }
}

/// Auth's controllers, wired to their dependencies.
struct AuthRoutes: Sendable {
    let tokens: TokenController
    let user: UserController
    let publicRoutes: PublicController
    let admin: AdminController
    let codes: CodesController

    init(config: AuthConfiguration, client: PostgresClient, http: HTTPClient, outbox: Outbox, mailOutbox: MailOutbox, logger: Logger) throws {
        let sessions = Sessions(
            client: client,
            issuer: TokenIssuer(signer: AccessTokenSigner(key: config.signingKey), issuer: config.issuer, lifetime: config.accessTokenLifetime),
            reuseInterval: config.refreshTokenReuseInterval,
            inactivityTimeout: config.sessionInactivityTimeout,
            logger: logger
        )
        let hasher = PasswordHasher(cost: config.bcryptCost)
        let accounts = Accounts(
            client: client,
            outbox: outbox,
            hasher: hasher,
            passwordPolicy: config.passwordPolicy,
            sessions: sessions,
            requiresConfirmation: config.emailConfirm,
            logger: logger
        )
        let authenticator = BearerAuthenticator(
            verifier: AccessTokenVerifier(keys: config.verificationKeys, issuer: config.issuer),
            client: client,
            inactivityTimeout: config.sessionInactivityTimeout,
            logger: logger
        )
        let mailer = try AuthMailer(
            overrides: config.mailTemplatesDirectory,
            publicURL: config.publicURL,
            siteURL: config.redirects.siteURL,
            lifetime: config.otpLifetime
        )
        let oneTimeCodes = OneTimeCodes(mailer: mailer, outbox: mailOutbox, lifetime: config.otpLifetime, logger: logger)
        let deletion = AccountDeletion(
            client: client,
            outbox: outbox,
            mailOutbox: mailOutbox,
            hasher: hasher,
            codes: oneTimeCodes,
            logger: logger
        )
        let flows = CodeFlows(
            client: client,
            outbox: outbox,
            codes: oneTimeCodes,
            accounts: accounts,
            sessions: sessions,
            redirects: config.redirects,
            logger: logger
        )
        let addresses = ClientAddressResolver(trustedProxies: config.trustedProxies)
        let tokenRequests = RateLimiter(config.tokenRateLimit)
        codes = CodesController(
            flows: flows,
            settings: AuthSettings(external: .init(apple: config.apple.isEnabled), mailerAutoconfirm: !config.emailConfirm),
            secureEmailChange: config.secureEmailChange,
            addresses: addresses,
            requests: tokenRequests
        )
        tokens = TokenController(
            accounts: accounts,
            sessions: sessions,
            flows: flows,
            apple: AppleSignIn(
                settings: config.apple,
                keys: AppleKeySet(url: config.apple.keysURL, client: http, logger: logger),
                client: client,
                accounts: accounts,
                sessions: sessions,
                logger: logger
            ),
            confirmsEmail: config.emailConfirm,
            addresses: addresses,
            tokenRequests: tokenRequests,
            signUps: RateLimiter(config.signUpRateLimit),
            failedSignIns: RateLimiter(config.failedSignInLimit)
        )
        user = UserController(
            accounts: accounts,
            sessions: sessions,
            authenticator: authenticator,
            flows: flows,
            deletion: deletion,
            secureEmailChange: config.secureEmailChange,
            securePasswordChange: config.securePasswordChange
        )
        publicRoutes = PublicController(accounts: accounts, keys: JSONWebKeySet(keys: config.verificationKeys.map(\.jwk)))
        admin = AdminController(
            accounts: accounts,
            authenticator: authenticator,
            serviceToken: config.serviceToken,
            mail: AdminController.CaughtMailReader(outbox: mailOutbox, client: client, logger: logger),
            flows: flows,
            deletion: deletion
        )
    }

    func add(to group: RouterGroup<AppRequestContext>) {
        group.add(middleware: APIVersionEchoMiddleware())
        tokens.addRoutes(to: group)
        user.addRoutes(to: group)
        publicRoutes.addRoutes(to: group)
        admin.addRoutes(to: group)
        codes.addRoutes(to: group)
    }
}

/// Echoes `X-Supabase-Api-Version` on successful responses (error responses echo it in
/// `GoTrueError`).
struct APIVersionEchoMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if let version = request.headers[.supabaseAPIVersion] {
            response.headers[.supabaseAPIVersion] = version
        }
        return response
    }
}
