#!/usr/bin/env bash
# Creates every topic of topics.txt on the broker at $KAFKA_BOOTSTRAP (idempotent).
set -euo pipefail
bootstrap="${KAFKA_BOOTSTRAP:?set KAFKA_BOOTSTRAP}"
replication="${KAFKA_REPLICATION_FACTOR:-1}"
topics_file="$(dirname "$0")/topics.txt"

while read -r name partitions retention cleanup; do
  [[ -z "${name}" || "${name}" == \#* ]] && continue
  /opt/kafka/bin/kafka-topics.sh --bootstrap-server "${bootstrap}" --create --if-not-exists \
    --topic "${name}" --partitions "${partitions}" --replication-factor "${replication}" \
    --config "retention.ms=${retention}" --config "cleanup.policy=${cleanup}"
done < "${topics_file}"
echo "topics ready"
