package compat

// kafkajsDriver is kafkajs 2.2.4, run as js/client.js with node, after
// `npm ci` in js/ (package-lock.json pins it and its codecs: kafkajs-snappy,
// lz4js, zstd-codec, all plain JavaScript). The script speaks the protocol
// of script_test.go. kafkajs consumes only in a group, so a read by offset
// or timestamp is a new group's consumer that seeks; it reports a
// partition's end as the high watermark of each batch; its headers are an
// object, a key's values kept together. Its transactions are
// producer.transaction()'s send, sendOffsets, commit and abort. Its admin
// client has no IncrementalAlterConfigs, DescribeLogDirs, ElectLeaders,
// DescribeProducers or OffsetForLeaderEpoch: those cells are N/A.
func kafkajsDriver() scriptDriver {
	return scriptDriver{short: "kafkajs", long: "kafkajs 2.2.4", dir: "js", argv: []string{"node", "client.js"}}
}
