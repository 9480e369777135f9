// Package compat checks that Kafka clients work against partlog: each
// client (kcat, confluent-kafka-python, sarama, franz-go, kafkajs)
// produces, consumes, joins groups, runs transactions and runs the admin
// calls of Kafka's workflow against a single 'partlog serve' and a
// three-node cluster, and the harness checks exact records, offsets and
// states — reading back what each partition holds with partlog's own
// client.
//
// The checks are written once (checks_test.go, txn_test.go,
// admin_test.go) against a driver interface (driver_test.go); each
// client's file implements it for that client. Run it from this directory:
//
//	go test -count=1 -v .
//	go test -count=1 -v . -compat.clients=kgo,sarama -compat.targets=single
package compat
