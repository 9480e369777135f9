'use strict'
// kafkajs's side of partlog's Kafka client compatibility suite.
//
// Run by ../kafkajs_test.go with node, after `npm ci` here. It reads one
// JSON request from the first line of standard input, {"op": ...,
// "bootstrap": ..., ...}, and answers as ../script_test.go describes: a
// one-shot op prints one line, {"result": ...}, {"error": "..."} or
// {"na": "..."}; "member" and "stream" print an event a line until standard
// input closes, then stop cleanly and exit.
//
// kafkajs compresses gzip itself and takes the other codecs as plugins:
// kafkajs-snappy, and below, lz4js (LZ4 frames) and zstd-codec (zstd, as
// WebAssembly), all plain JavaScript, nothing to compile.

const fs = require('fs')
const readline = require('readline')
const { Kafka, CompressionTypes, CompressionCodecs, ConfigResourceTypes, logLevel } = require('kafkajs')

CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
CompressionCodecs[CompressionTypes.LZ4] = () => {
  const lz4 = require('lz4js')
  return {
    async compress (encoder) { return Buffer.from(lz4.compress(encoder.buffer)) },
    async decompress (buffer) { return Buffer.from(lz4.decompress(buffer)) }
  }
}
let zstd // zstd-codec's streaming API, loaded on first use
const loadZstd = () => zstd || (zstd = new Promise(resolve => {
  require('zstd-codec').ZstdCodec.run(z => resolve(new z.Streaming()))
}))
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  async compress (encoder) { return Buffer.from((await loadZstd()).compress(encoder.buffer, 3)) },
  async decompress (buffer) { return Buffer.from((await loadZstd()).decompress(buffer)) }
})

const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD }

// TIMEOUT bounds a call; the harness bounds the process too.
const TIMEOUT = 30000

class NotAvailable extends Error {}

const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n')
const text = b => (b === null || b === undefined) ? null : b.toString('utf8')
const buf = s => s === null ? null : Buffer.from(s, 'utf8')

// kafkajs's headers are an object: a key's values in one array, keys in
// the order they first appear.
const headersOut = pairs => {
  const h = {}
  for (const [k, v] of pairs) {
    if (k in h) h[k] = [].concat(h[k], buf(v))
    else h[k] = buf(v)
  }
  return h
}
const headersIn = h => {
  const pairs = []
  for (const [k, v] of Object.entries(h || {})) {
    for (const one of Array.isArray(v) ? v : [v]) pairs.push([k, text(one)])
  }
  return pairs
}

const record = (partition, m) => ({
  partition, offset: Number(m.offset), timestamp: Number(m.timestamp), key: text(m.key), value: text(m.value), headers: headersIn(m.headers)
})

// ssl is kafkajs's TLS setting for a request's "security" files, if any.
const ssl = req => {
  const sec = req.security
  if (!sec || !sec.ca) return undefined
  const s = { ca: [fs.readFileSync(sec.ca)] }
  if (sec.cert) Object.assign(s, { cert: fs.readFileSync(sec.cert), key: fs.readFileSync(sec.key) })
  return s
}

// sasl is kafkajs's SASL setting for a request's "security", if any.
const sasl = req => {
  const sec = req.security
  if (!sec || !sec.mechanism) return undefined
  return { mechanism: sec.mechanism.toLowerCase(), username: sec.user, password: sec.password }
}

const client = req => new Kafka({
  clientId: 'partlog-compat',
  brokers: req.bootstrap.split(','),
  ssl: ssl(req),
  sasl: sasl(req),
  logLevel: logLevel.NOTHING,
  retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 20 }
})

const withTimeout = (promise, what) => Promise.race([
  promise,
  new Promise((resolve, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${TIMEOUT} ms`)), TIMEOUT).unref())
])

// stdinClosed resolves once standard input, after the request, closes.
let stdinClosed

// messagesOf converts records to produce, each to its partition.
const messagesOf = records => records.map(r => ({
  key: buf(r.key), value: buf(r.value), partition: r.partition, headers: headersOut(r.headers), timestamp: r.timestamp ? String(r.timestamp) : undefined
}))

// acksOf gives each record of one send its partition and offset, from the
// send's answer: one per partition, with the base offset of its records
// in the order sent; none with acks=0 (offset -1).
const acksOf = (records, sent) => {
  const base = {}
  for (const m of sent) base[m.partition] = Number(m.baseOffset)
  const next = {}
  return records.map(r => {
    if (!(r.partition in base)) return { partition: r.partition, offset: -1 }
    next[r.partition] = (next[r.partition] || 0) + 1
    return { partition: r.partition, offset: base[r.partition] + next[r.partition] - 1 }
  })
}

async function produce (req) {
  const kafka = client(req)
  const producer = kafka.producer({ idempotent: req.idempotent, maxInFlightRequests: req.idempotent ? 1 : undefined, allowAutoTopicCreation: false })
  await producer.connect()
  try {
    const sent = await producer.send({ topic: req.topic, acks: req.acks, compression: codecs[req.compression], messages: messagesOf(req.records) })
    return acksOf(req.records, sent)
  } finally {
    await producer.disconnect()
  }
}

// transactionalProducer is a connected producer of the request's
// transactional id: idempotent, one request in flight, as kafkajs
// requires of one.
async function transactionalProducer (kafka, req) {
  const producer = kafka.producer({ transactionalId: req.transactional_id, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
  await producer.connect()
  return producer
}

// transact runs each transaction: producer.transaction(), send (which
// resolves once every record is acknowledged), then commit or abort.
async function transact (req) {
  const producer = await transactionalProducer(client(req), req)
  try {
    const acked = []
    for (const t of req.transactions) {
      const txn = await producer.transaction()
      try {
        const sent = await txn.send({ topic: req.topic, acks: -1, messages: messagesOf(t.records) })
        acked.push(...acksOf(t.records, sent))
      } catch (e) {
        await txn.abort().catch(() => {})
        throw e
      }
      if (t.commit) await txn.commit()
      else await txn.abort()
    }
    return acked
  } finally {
    await producer.disconnect()
  }
}

// transform consumes the input in the group (read_committed, kafkajs's
// default; no auto commit) and carries each batch over in a transaction:
// send of the transforms, sendOffsets of the batch's next offset to the
// group, commit -- or, in the run that aborts, abort after the first.
// Batches come one at a time (partitionsConsumedConcurrently 1), so one
// transaction is open at a time.
async function transform (req) {
  const kafka = client(req)
  const producer = await transactionalProducer(kafka, req)
  const consumer = kafka.consumer({
    groupId: req.group, readUncommitted: false, heartbeatInterval: 300, sessionTimeout: 10000, maxWaitTimeInMs: 100, allowAutoTopicCreation: false
  })
  try {
    await consumer.connect()
    await consumer.subscribe({ topics: [req.input], fromBeginning: true })
    let done = 0
    let over = false
    let settle
    const finished = new Promise((resolve, reject) => { settle = { resolve, reject } })
    const end = (f, v) => { over = true; f(v) }
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (over || batch.messages.length === 0) return
        const msgs = batch.messages.slice(0, req.count - done)
        const last = msgs[msgs.length - 1]
        const txn = await producer.transaction()
        try {
          await txn.send({
            topic: req.output,
            acks: -1,
            messages: msgs.map(m => ({
              key: m.key, value: Buffer.concat([Buffer.from('transformed: '), m.value]), partition: batch.partition, headers: { 'input-offset': m.offset }
            }))
          })
          await txn.sendOffsets({
            consumerGroupId: req.group, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(last.offset) + 1) }] }]
          })
          if (req.abort) {
            await txn.abort()
            end(settle.resolve, msgs.length)
            return
          }
          await txn.commit()
        } catch (e) {
          await txn.abort().catch(() => {})
          end(settle.reject, e)
          return
        }
        done += msgs.length
        if (done >= req.count) end(settle.resolve, done)
      }
    })
    return await withTimeout(finished, 'transform')
  } finally {
    await consumer.disconnect()
    await producer.disconnect()
  }
}

// readPartition runs a consumer of a new group over topic, starting per
// `from` (beginning, end, or a seek to an offset), and resolves with what
// onBatch decides from each batch of `partition`. kafkajs consumes only in
// a group: it has no assign.
async function readPartition (req, from, onBatch) {
  const kafka = client(req)
  const consumer = kafka.consumer({
    groupId: `partlog-compat-${process.pid}-${Date.now()}`,
    heartbeatInterval: 300,
    sessionTimeout: 10000,
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false,
    readUncommitted: req.isolation === 'read_uncommitted' // else kafkajs's default, read_committed
  })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [req.topic], fromBeginning: from.kind === 'beginning' })
    let settle
    const done = new Promise((resolve, reject) => { settle = { resolve, reject } })
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.partition !== req.partition) return
        try {
          const result = onBatch(batch)
          if (result !== undefined) settle.resolve(result)
        } catch (e) { settle.reject(e) }
      }
    })
    if (from.kind === 'offset') consumer.seek({ topic: req.topic, partition: req.partition, offset: String(from.at) })
    return await withTimeout(done, 'consume')
  } finally {
    await consumer.disconnect()
  }
}

async function consume (req) {
  let from = req.from
  if (from.kind === 'timestamp') { // ListOffsets by time, then a seek
    const admin = client(req).admin()
    await admin.connect()
    const offsets = await admin.fetchTopicOffsetsByTimestamp(req.topic, from.at)
    await admin.disconnect()
    from = { kind: 'offset', at: Number(offsets.find(o => o.partition === req.partition).offset) }
  }
  const out = []
  return readPartition(req, from, batch => {
    for (const m of batch.messages) {
      if (out.length < req.count) out.push(record(batch.partition, m))
    }
    if (out.length >= req.count) return out
  })
}

// consumeToEnd reads from the beginning until a batch's high watermark
// says there is no more.
async function consumeToEnd (req) {
  const out = []
  return readPartition(req, { kind: 'beginning' }, batch => {
    for (const m of batch.messages) out.push(record(batch.partition, m))
    const hw = Number(batch.highWatermark)
    if (out.length > 0 && out[out.length - 1].offset + 1 >= hw) return { records: out, end: hw }
  })
}

// member joins the group and commits each record once it has reported it;
// it reports a rebalance as an empty assignment until it joins again, and
// leaves the group (disconnect) when standard input closes.
async function member (req) {
  const kafka = client(req)
  const consumer = kafka.consumer({ groupId: req.group, heartbeatInterval: 300, sessionTimeout: 10000, maxWaitTimeInMs: 100, allowAutoTopicCreation: false })
  consumer.on(consumer.events.REBALANCING, () => emit({ assigned: [] }))
  consumer.on(consumer.events.GROUP_JOIN, e => emit({ assigned: e.payload.memberAssignment[req.topic] || [] }))
  consumer.on(consumer.events.CRASH, e => emit({ error: `crash: ${e.payload.error}` }))
  await consumer.connect()
  await consumer.subscribe({ topics: [req.topic], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      emit({ record: record(partition, message) })
      await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }])
    }
  })
  await stdinClosed
  await consumer.disconnect()
}

// stream produces numbered records idempotently at acks=all, a record a
// send (so that each answer is one record's offset), one send at a time,
// until standard input closes. kafkajs's idempotent producer is only
// idempotent for one send at a time (kafkajs issues #353, #1005): a send
// retried after a leader dies is given the sequence number in force when
// it is retried, so with sends side by side a batch the dead leader had
// written went in again behind later ones.
async function stream (req) {
  const kafka = client(req)
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
  await producer.connect()
  let stopping = false
  stdinClosed.then(() => { stopping = true })
  const inFlight = new Set()
  for (let seq = 0; !stopping; seq++) {
    const send = producer.send({ topic: req.topic, acks: -1, messages: [{ key: `key-${seq % 30}`, value: String(seq) }] })
      .then(([m]) => emit({ seq, partition: m.partition, offset: Number(m.baseOffset) }),
        e => emit({ seq, partition: -1, offset: -1, error: String(e) }))
      .finally(() => inFlight.delete(send))
    inFlight.add(send)
    if (inFlight.size >= 1) await Promise.race(inFlight)
  }
  await Promise.all(inFlight)
  await producer.disconnect()
}

async function withAdmin (req, fn) {
  const admin = client(req).admin()
  await admin.connect()
  try {
    return await fn(admin)
  } finally {
    await admin.disconnect()
  }
}

const entries = configs => Object.entries(configs).map(([name, value]) => ({ name, value }))

const describe = (req, type, name) => withAdmin(req, async admin => {
  const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type, name }] })
  const out = {}
  for (const e of resources[0].configEntries) out[e.configName] = { value: e.configValue, is_default: e.isDefault }
  return out
})

const notIn = call => async () => { throw new NotAvailable(`kafkajs 2.2.4 has no ${call}`) }

const ops = {
  produce,
  consume,
  consume_to_end: consumeToEnd,
  member,
  stream,
  transact,
  transform,
  create_topic: req => withAdmin(req, async admin => {
    await admin.createTopics({
      waitForLeaders: true,
      timeout: 10000,
      topics: [{ topic: req.topic, numPartitions: req.partitions, replicationFactor: req.replication_factor, configEntries: entries(req.configs) }]
    })
  }),
  partitions: req => withAdmin(req, async admin => {
    const md = await admin.fetchTopicMetadata({ topics: [req.topic] })
    return md.topics[0].partitions.length
  }),
  delete_topic: req => withAdmin(req, admin => admin.deleteTopics({ topics: [req.topic], timeout: 10000 })),
  create_partitions: req => withAdmin(req, admin => admin.createPartitions({ timeout: 10000, topicPartitions: [{ topic: req.topic, count: req.total }] })),
  incremental_alter_topic_config: notIn('IncrementalAlterConfigs'),
  alter_topic_config: req => withAdmin(req, admin => admin.alterConfigs({
    validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: req.topic, configEntries: entries(req.configs) }]
  })),
  describe_topic_config: req => describe(req, ConfigResourceTypes.TOPIC, req.topic),
  describe_broker_config: req => describe(req, ConfigResourceTypes.BROKER, String(req.broker)),
  // deleteTopicRecords looks the leaders up in metadata it does not load
  // itself (KafkaJSTopicMetadataNotLoaded): fetchTopicMetadata loads it.
  // It answers nothing: the low watermark is not told.
  delete_records: req => withAdmin(req, async admin => {
    await admin.fetchTopicMetadata({ topics: [req.topic] })
    await admin.deleteTopicRecords({ topic: req.topic, partitions: [{ partition: req.partition, offset: String(req.offset) }] })
    return -1
  }),
  earliest_offset: req => withAdmin(req, async admin => {
    const offsets = await admin.fetchTopicOffsets(req.topic)
    return Number(offsets.find(o => o.partition === req.partition).low)
  }),
  // describeCluster sends Metadata.
  describe_cluster: req => withAdmin(req, async admin => {
    const c = await admin.describeCluster()
    return { cluster_id: c.clusterId, controller_id: c.controller, brokers: c.brokers.map(b => b.nodeId) }
  }),
  describe_log_dirs: notIn('DescribeLogDirs'),
  elect_preferred_leaders: notIn('ElectLeaders'),
  reassign: req => withAdmin(req, admin => admin.alterPartitionReassignments({
    timeout: 10000, topics: [{ topic: req.topic, partitionAssignment: [{ partition: req.partition, replicas: req.replicas }] }]
  })),
  reassigning: req => withAdmin(req, async admin => {
    const res = await admin.listPartitionReassignments({ topics: [{ topic: req.topic, partitions: [0] }], timeout: 10000 })
    const out = {}
    for (const t of res.topics) for (const p of t.partitions) out[p.partition] = p.addingReplicas
    return out
  }),
  describe_producers: notIn('DescribeProducers'),
  offset_for_leader_epoch: notIn('OffsetForLeaderEpoch call')
}

async function main () {
  const rl = readline.createInterface({ input: process.stdin })
  const lines = rl[Symbol.asyncIterator]()
  const req = JSON.parse((await lines.next()).value)
  stdinClosed = (async () => { while (!(await lines.next()).done);})()
  try {
    const result = await ops[req.op](req)
    if (req.op !== 'member' && req.op !== 'stream') emit({ result: result === undefined ? null : result })
  } catch (e) {
    if (e instanceof NotAvailable) emit({ na: e.message })
    else emit({ error: `${e.name}: ${e.message}` })
  }
  process.exit(0)
}

main()
