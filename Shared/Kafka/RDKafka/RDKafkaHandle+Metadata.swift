import CRdKafka
import Contracts
import Foundation

extension RDKafkaHandle {
    /// Requests cluster metadata from any broker, on a thread of its own (the call blocks up to
    /// `timeout`), and succeeds when one answers.
    func checkConnection(timeout: Duration) async throws(KafkaError) {
        let milliseconds = Int32(clamping: timeout.wholeMilliseconds)
        let error: rd_kafka_resp_err_t = await Self.blocking { [self] in
            var metadata: UnsafePointer<rd_kafka_metadata>? = nil
            let error = rd_kafka_metadata(pointer, 0, nil, &metadata, milliseconds)
            if let metadata { rd_kafka_metadata_destroy(metadata) }
            return error
        }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError.unreachable(reason: String(cString: rd_kafka_err2str(error)))
        }
    }

    /// Runs a blocking librdkafka call on a new thread, so that it never holds one of Swift's
    /// few cooperative threads.
    static func blocking<Value: Sendable>(_ call: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: call()) }
            thread.name = "kafka-blocking-call"
            thread.start()
        }
    }
}
