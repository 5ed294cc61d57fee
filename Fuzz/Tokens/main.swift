import Foundation
import FuzzDriver
import Identity

// libFuzzer target (`make test-fuzz`): whatever a bearer token or a key set holds, reading it
// answers or throws — never crashes, traps or hangs. The bytes go through the three readers a
// request's token and auth's published key set meet: the verifier (three parts, base64url, the
// header's JSON, the signature), the claims' decoder, and the key set's decoder with each key's
// conversion to a public key.
enum Target {
    static let verifier = AccessTokenVerifier(keys: [SigningKey.generate().verificationKey], issuer: "http://localhost:8080/auth/v1")
}

/// One input: what libFuzzer calls, by this name.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = Data(UnsafeBufferPointer(start: start, count: count))
    _ = try? Target.verifier.verify(String(decoding: bytes, as: UTF8.self))
    _ = try? JSONDecoder().decode(AccessTokenClaims.self, from: bytes)
    if let set = try? JSONDecoder().decode(JSONWebKeySet.self, from: bytes) {
        _ = set.verificationKeys
    }
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
