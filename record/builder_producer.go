package record

// SetProducer sets the producer id, epoch and base sequence of the batch
// being built, as an idempotent producer does when it sends a batch for the
// first time (Kafka assigns sequences when a batch is drained, not when it
// is opened). It may be called after records were appended; the next Build
// or AppendTo writes them into the header and its CRC.
func (b *Builder) SetProducer(id int64, epoch int16, baseSequence int32) {
	b.opts.ProducerID, b.opts.ProducerEpoch, b.opts.BaseSequence = id, epoch, baseSequence
}
