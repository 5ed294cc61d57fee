import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority made for one test run, and a server certificate it signed for
/// 127.0.0.1 and localhost: what a TLS server of the test support presents, and the CA a client
/// under test is told to trust (a file, as a deployment's `…_CA_FILE` names one).
package struct TestCertificateAuthority: Sendable {
    /// The CA's certificate, PEM.
    package let caPEM: String
    /// The server's certificate and private key, PEM.
    package let serverCertificatePEM: String
    package let serverKeyPEM: String
    /// A folder of its own holding `ca.pem`, `server.pem` and `server-key.pem`.
    package let folder: URL

    package var caFile: String { folder.appendingPathComponent("ca.pem").path }
    package var serverCertificateFile: String { folder.appendingPathComponent("server.pem").path }
    package var serverKeyFile: String { folder.appendingPathComponent("server-key.pem").path }

    package init() throws {
        let caKey = P256.Signing.PrivateKey()
        let serverKey = P256.Signing.PrivateKey()
        let now = Date()
        let caName = try DistinguishedName { CommonName("Splash test CA") }
        let ca = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3_600),
            notValidAfter: now.addingTimeInterval(86_400),
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(caKey)
        )
        let server = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3_600),
            notValidAfter: now.addingTimeInterval(86_400),
            issuer: caName,
            subject: try DistinguishedName { CommonName("127.0.0.1") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])), .dnsName("localhost")])
                try ExtendedKeyUsage([.serverAuth])
            },
            issuerPrivateKey: .init(caKey)
        )
        caPEM = try ca.serializeAsPEM().pemString
        serverCertificatePEM = try server.serializeAsPEM().pemString
        serverKeyPEM = serverKey.pemRepresentation
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("test-ca-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try caPEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        try serverCertificatePEM.write(toFile: serverCertificateFile, atomically: true, encoding: .utf8)
        try serverKeyPEM.write(toFile: serverKeyFile, atomically: true, encoding: .utf8)
    }
}
