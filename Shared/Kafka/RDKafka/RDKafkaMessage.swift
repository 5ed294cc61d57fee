import CRdKafka
import Foundation

extension KafkaMessage {
    /// Copies a consumed `rd_kafka_message_t` (which must not be an error event).
    init(copying message: UnsafePointer<rd_kafka_message_t>) {
        let raw = message.pointee
        var headers: [KafkaHeader] = []
        var headerList: OpaquePointer? = nil
        if rd_kafka_message_headers(message, &headerList) == RD_KAFKA_RESP_ERR_NO_ERROR, let headerList {
            var index = 0
            var name: UnsafePointer<CChar>? = nil
            var value: UnsafeRawPointer? = nil
            var size = 0
            while rd_kafka_header_get_all(headerList, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
                headers.append(KafkaHeader(name.map { String(cString: $0) } ?? "", bytes))
                index += 1
            }
        }
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let milliseconds = rd_kafka_message_timestamp(message, &timestampType)
        self.init(
            topic: String(cString: rd_kafka_topic_name(raw.rkt)),
            partition: raw.partition,
            offset: raw.offset,
            key: raw.key.map { Array(UnsafeRawBufferPointer(start: $0, count: raw.key_len)) },
            value: raw.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: raw.len)) } ?? [],
            headers: headers,
            timestamp: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
        )
    }
}

/// An `rd_kafka_topic_partition_list_t` built from Swift values, destroyed with this value.
final class RDKafkaPartitionList {
    let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    init(_ partitions: [(topic: String, partition: Int32, offset: Int64?)]) {
        pointer = rd_kafka_topic_partition_list_new(Int32(partitions.count))
        for entry in partitions {
            let element = rd_kafka_topic_partition_list_add(pointer, entry.topic, entry.partition)
            if let offset = entry.offset { element?.pointee.offset = offset }
        }
    }

    deinit { rd_kafka_topic_partition_list_destroy(pointer) }

    /// The (topic, partition) pairs of a list librdkafka owns.
    static func entries(of list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> [(topic: String, partition: Int32)] {
        (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return (String(cString: element.topic), element.partition)
        }
    }
}
