import Crypto
import Foundation
import S3Blobs
import Testing

/// SigV4 against AWS's published examples: the signature test suite's `get-vanilla`, and the four
/// worked examples of S3's "Signature Calculations for the Authorization Header" page.
@Suite("SigV4 signatures") struct SigV4Tests {
    static let s3Example = SigV4(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE",
        secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1"
    )
    static let host = ("host", "examplebucket.s3.amazonaws.com")
    static let date = ("x-amz-date", "20130524T000000Z")

    @Test func theSignatureTestSuitesGetVanilla() {
        let signer = SigV4(
            accessKeyID: "AKIDEXAMPLE",
            secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            region: "us-east-1",
            service: "service"
        )
        let authorization = signer.authorization(
            method: "GET",
            path: "/",
            query: [],
            headers: [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z")],
            payloadHash: SigV4.emptyPayload,
            timestamp: "20150830T123600Z"
        )
        #expect(
            authorization
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
                .replacingOccurrences(of: ", ", with: ",")
        )
    }

    @Test func s3sGetObjectWithARange() {
        let headers = [Self.host, ("Range", "bytes=0-9 "), ("x-amz-content-sha256", SigV4.emptyPayload), Self.date]
        let (canonical, _) = Self.s3Example.canonicalRequest(
            method: "GET",
            path: "/test.txt",
            query: [],
            headers: headers,
            payloadHash: SigV4.emptyPayload
        )
        #expect(
            SHA256.hash(data: Array(canonical.utf8)).map { String(format: "%02x", $0) }.joined()
                == "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
        )
        #expect(
            Self.s3Example.authorization(
                method: "GET",
                path: "/test.txt",
                query: [],
                headers: headers,
                payloadHash: SigV4.emptyPayload,
                timestamp: "20130524T000000Z"
            )
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
    }

    @Test func s3sPutObjectWithAnEncodedKey() {
        let body = Array("Welcome to Amazon S3.".utf8)
        let hash = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        #expect(hash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let headers = [
            ("Date", "Fri, 24 May 2013 00:00:00 GMT"), Self.host, ("x-amz-content-sha256", hash), Self.date,
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ]
        #expect(
            Self.s3Example.authorization(
                method: "PUT",
                path: "/" + SigV4.encode("test$file.text", keepSlash: true),
                query: [],
                headers: headers,
                payloadHash: hash,
                timestamp: "20130524T000000Z"
            )
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        )
    }

    @Test func s3sQueriesAValueLessOneAndAListsTwo() {
        let headers = [Self.host, ("x-amz-content-sha256", SigV4.emptyPayload), Self.date]
        #expect(
            Self.s3Example.authorization(
                method: "GET",
                path: "/",
                query: [("lifecycle", "")],
                headers: headers,
                payloadHash: SigV4.emptyPayload,
                timestamp: "20130524T000000Z"
            )
            .hasSuffix("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
        )
        // Given out of order: the canonical query sorts them.
        #expect(
            Self.s3Example.authorization(
                method: "GET",
                path: "/",
                query: [("prefix", "J"), ("max-keys", "2")],
                headers: headers,
                payloadHash: SigV4.emptyPayload,
                timestamp: "20130524T000000Z"
            )
            .hasSuffix("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
        )
    }

    @Test func keysAreEncodedSegmentBySegment() {
        #expect(SigV4.encode("posts/ana/a photo+1.jpg", keepSlash: true) == "posts/ana/a%20photo%2B1.jpg")
        #expect(SigV4.encode("é/x", keepSlash: false) == "%C3%A9%2Fx")
    }
}
