/// Failures of the Kafka client layer.
public enum KafkaError: Error, CustomStringConvertible, Equatable {
    /// librdkafka rejected a configuration property.
    case configuration(key: String, reason: String)
    /// librdkafka could not create a client handle.
    case clientCreation(reason: String)
    /// The embedded cluster could not start or change.
    case embeddedCluster(reason: String)
    /// No broker answered in time.
    case unreachable(reason: String)
    /// The cluster refused an administrative request (such as creating a topic).
    case administration(reason: String)

    public var description: String {
        switch self {
        case .configuration(let key, let reason): "Kafka configuration \(key): \(reason)"
        case .clientCreation(let reason): "could not create a Kafka client: \(reason)"
        case .embeddedCluster(let reason): "embedded Kafka cluster: \(reason)"
        case .unreachable(let reason): "no Kafka broker answered: \(reason)"
        case .administration(let reason): "Kafka administration: \(reason)"
        }
    }
}
