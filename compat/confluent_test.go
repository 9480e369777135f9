package compat

// confluentDriver is confluent-kafka-python 1.7.0 on librdkafka 2.0.2,
// Debian's python3-confluent-kafka, run as python/client.py with Debian's
// /usr/bin/python3 (not a python3 that PATH may find first, which lacks
// the package). The script speaks the protocol of script_test.go; it
// produces with Producer and delivery callbacks, consumes with an assigned
// Consumer (a group member with subscribe, committing each record
// synchronously and on revocation), sees the end of a partition as
// librdkafka's _PARTITION_EOF event (enable.partition.eof=true), runs
// transactions with transactional.id (init_transactions, begin_transaction,
// send_offsets_to_transaction, commit_transaction, abort_transaction), and
// runs the admin calls of AdminClient. Version 1.7.0 has no DeleteRecords,
// IncrementalAlterConfigs, DescribeLogDirs, ElectLeaders or
// DescribeProducers: those cells are N/A.
func confluentDriver() scriptDriver {
	return scriptDriver{short: "confluent", long: "confluent-kafka-python 1.7.0 (librdkafka 2.0.2)",
		dir: "python", argv: []string{"/usr/bin/python3", "client.py"}}
}
