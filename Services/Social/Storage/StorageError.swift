import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceKit

/// The errors of the Storage API, each with Supabase Storage's error code. Thrown as `Problem`s
/// whose type is the code, and written in Storage's shape under `/storage/v1` (`StorageErrorBody`).
enum StorageError {
    static func invalidKey(_ detail: String) -> Problem {
        Problem(status: .badRequest, type: "InvalidKey", title: "Invalid key", detail: detail)
    }

    static func invalidRequest(_ detail: String) -> Problem {
        Problem(status: .badRequest, type: "InvalidRequest", title: "Invalid request", detail: detail)
    }

    static let notFound = Problem(status: .notFound, type: "not_found", title: "Not found", detail: "Object not found")
    static let bucketNotFound = Problem(status: .notFound, type: "not_found", title: "Not found", detail: "Bucket not found")

    static func unauthorized(_ detail: String) -> Problem {
        Problem(status: .forbidden, type: "Unauthorized", title: "Unauthorized", detail: detail)
    }

    static let duplicate = Problem(status: .conflict, type: "Duplicate", title: "Duplicate", detail: "The resource already exists")
    static let attached = Problem(
        status: .conflict,
        type: "object-attached",
        title: "Object attached",
        detail: "The object is the photo of a post; delete the post first"
    )

    static func tooLarge(limit: Int) -> Problem {
        Problem(
            status: .contentTooLarge,
            type: "EntityTooLarge",
            title: "Payload too large",
            detail: "The object exceeded the maximum allowed size of \(limit >> 20) MB"
        )
    }

    static func notAnImage(_ detail: String) -> Problem {
        Problem(status: .unsupportedMediaType, type: "invalid_mime_type", title: "Invalid mime type", detail: detail)
    }

    static let invalidSignature = Problem(
        status: .badRequest,
        type: "InvalidSignature",
        title: "Invalid signature",
        detail: "The signed link is not valid for this object"
    )
    static let expiredSignature = Problem(status: .badRequest, type: "InvalidJWT", title: "Expired link", detail: "The signed link has expired")
}
