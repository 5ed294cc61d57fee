import AsyncSignals
import Database
import Foundation
import LocalStack
import Logging
import Mail
import PostgresNIO
import TestSupport

// The mail relay's throughput (`make bench-mail`): `--mails` receipts queued in a service's mail
// outbox and delivered by `MailRelay` to aiosmtpd on loopback (STARTTLS, as the relay uses it
// when offered), beside curl sending the same rendered messages with `--mail-rcpt`, one process
// per mail as a shell loop would, to the same server in the same run; `--rounds` times each.
let mails = BenchmarkArguments.integer("--mails", default: 300)
let rounds = BenchmarkArguments.integer("--rounds", default: 3)

func note(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
func format(_ value: Double) -> String { String(format: "%.0f", value) }

let logger: Logger = {
    var logger = Logger(label: "mail-bench")
    logger.logLevel = .warning
    return logger
}()
let server = try await SMTPTestServer()
let database = try await TestPostgres.shared.makeDatabase()
let schema = "mailbench"
let sender = MailSender("Splash <receipts@splash.example>")!
let endpoint = SMTPEndpoint(url: URL(string: server.url)!, caFile: server.authority.caFile)

func receipt(_ n: Int) -> OutgoingMail {
    OutgoingMail(
        id: UUID(),
        kind: "receipt",
        recipient: .address("customer-\(n)@example.com"),
        subject: "Your receipt from Pizzeria Luna",
        text: "Thanks for your order.\n\n2 × Margherita  25.80 €\nTotal  25.80 €",
        html: "<h1>Thanks for your order</h1><table><tr><td>2 × Margherita</td><td>25.80 €</td></tr></table>"
    )
}

try await database.withClient { client in
    try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"), logger: logger)
    try await MailOutbox.migrate(schema: schema, on: client, logger: logger)
    let outbox = try MailOutbox(schema: schema, wakeup: Wakeup())
    let relay = MailRelay(outbox: outbox, client: client, destination: .smtp(SMTPClient(endpoint: endpoint, sender: sender)), logger: logger)
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mail-bench-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    for round in 1...rounds {
        // The relay: queued in one transaction, then delivered until the outbox is empty.
        try await client.withTransaction(settings: [], logger: logger) { connection in
            for n in 0..<mails { try await outbox.append(receipt(n), on: connection, logger: logger) }
        }
        var before = server.received.count
        var started = ContinuousClock.now
        while try await relay.deliverDue() > 0 {}
        let relaySeconds = (ContinuousClock.now - started).seconds
        let relayed = server.received.count - before

        // curl: the same messages, rendered as the relay renders them, one process each.
        let files = try (0..<mails).map { n -> URL in
            let mail = receipt(n)
            let file = folder.appendingPathComponent("\(n).eml")
            try MailMessage(to: "customer-\(n)@example.com", subject: mail.subject, text: mail.text, html: mail.html)
                .rendered(from: sender, id: mail.id, date: Date()).write(to: file, atomically: true, encoding: .utf8)
            return file
        }
        before = server.received.count
        started = ContinuousClock.now
        for (n, file) in files.enumerated() {
            _ = try await ProcessCommand(
                URL(fileURLWithPath: "/usr/bin/env"),
                [
                    "curl", "--silent", "--show-error", "--url", server.url, "--ssl", "--cacert", server.authority.caFile,
                    "--mail-from", sender.address, "--mail-rcpt", "customer-\(n)@example.com", "--upload-file", file.path,
                ]
            ).runToCompletion()
        }
        let curlSeconds = (ContinuousClock.now - started).seconds
        let curled = server.received.count - before
        note(
            "round \(round): relay \(relayed) mails in \(String(format: "%.2f", relaySeconds)) s = \(format(Double(relayed) / relaySeconds))/s; "
                + "curl \(curled) in \(String(format: "%.2f", curlSeconds)) s = \(format(Double(curled) / curlSeconds))/s"
        )
    }
}
server.stop()
