#!/usr/bin/python3
"""confluent-kafka-python's side of partlog's Kafka client compatibility suite.

Run by ../confluent_test.go with Debian's python3 and python3-confluent-kafka
(1.7.0, on librdkafka 2.0.2). It reads one JSON request from the first line
of standard input, {"op": ..., "bootstrap": ..., ...}, and answers as
../script_test.go describes: a one-shot op prints one line, {"result": ...},
{"error": "..."} or {"na": "..."}; "member" and "stream" print an event a
line until standard input closes, then stop cleanly and exit.

Keys, values and header values travel as UTF-8 text or null.
"""

import json
import sys
import threading
import time

from confluent_kafka import (OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError,
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import (AdminClient, ConfigResource, NewPartitions,
                                   NewTopic)

# How long a call may wait for the cluster; the harness bounds the process too.
TIMEOUT = 30


class NotAvailable(Exception):
    """The client has no such call: the check's cell is N/A."""


def base(req):
    """The settings of every client: the nodes, and librdkafka's ssl and
    sasl settings for a request with "security"."""
    conf = {"bootstrap.servers": req["bootstrap"]}
    sec = req.get("security")
    if not sec:
        return conf
    tls, sasl = bool(sec["ca"]), bool(sec["mechanism"])
    conf["security.protocol"] = {(True, True): "sasl_ssl", (True, False): "ssl",
                                 (False, True): "sasl_plaintext", (False, False): "plaintext"}[(tls, sasl)]
    if tls:
        conf["ssl.ca.location"] = sec["ca"]
    if sec["cert"]:
        conf.update({"ssl.certificate.location": sec["cert"], "ssl.key.location": sec["key"]})
    if sasl:
        conf.update({"sasl.mechanisms": sec["mechanism"], "sasl.username": sec["user"], "sasl.password": sec["password"]})
    return conf


def emit(obj):
    print(json.dumps(obj), flush=True)


def text(b):
    return None if b is None else b.decode("utf-8")


def raw(s):
    return None if s is None else s.encode("utf-8")


def record(msg):
    return {"partition": msg.partition(), "offset": msg.offset(), "timestamp": msg.timestamp()[1],
            "key": text(msg.key()), "value": text(msg.value()),
            "headers": [[k, text(v)] for k, v in (msg.headers() or [])]}


def stdin_closed():
    """Returns an Event set once standard input (after the request) closes."""
    closed = threading.Event()

    def watch():
        sys.stdin.read()
        closed.set()
    threading.Thread(target=watch, daemon=True).start()
    return closed


def produce(req):
    acks = {0: "0", 1: "1", -1: "all"}[req["acks"]]
    p = Producer({**base(req), "acks": acks, "compression.type": req["compression"],
                  "enable.idempotence": req["idempotent"], "linger.ms": 5})
    outcomes = [None] * len(req["records"])
    for i, r in enumerate(req["records"]):
        def delivered(err, msg, i=i):
            outcomes[i] = err if err else msg
        kwargs = {"value": raw(r["value"]), "key": raw(r["key"]), "partition": r["partition"],
                  "headers": [(k, raw(v)) for k, v in r["headers"]], "on_delivery": delivered}
        if r.get("timestamp"):
            kwargs["timestamp"] = r["timestamp"]
        p.produce(req["topic"], **kwargs)
    if p.flush(TIMEOUT) > 0:
        raise Exception("records still unacknowledged after %d s" % TIMEOUT)
    acked = []
    for i, o in enumerate(outcomes):
        if isinstance(o, KafkaError):
            raise Exception("record %d: %s" % (i, o))
        # With acks=0 there is no offset to give (None, or OFFSET_INVALID).
        offset = o.offset()
        acked.append({"partition": o.partition(), "offset": offset if offset is not None and offset >= 0 else -1})
    return acked


def consumer(req, **conf):
    # A group id is required even to assign partitions by hand; nothing is
    # committed under it.
    c = {**base(req), "group.id": "partlog-compat", "enable.auto.commit": False}
    c.update(conf)
    return Consumer(c)


def consume(req):
    conf = {}
    if req.get("isolation"):
        conf["isolation.level"] = req["isolation"]  # else librdkafka's default, read_committed
    c = consumer(req, **conf)
    try:
        start = req["from"]
        tp = TopicPartition(req["topic"], req["partition"])
        if start["kind"] == "beginning":
            tp.offset = OFFSET_BEGINNING
        elif start["kind"] == "end":
            tp.offset = OFFSET_END
        elif start["kind"] == "offset":
            tp.offset = start["at"]
        else:  # a timestamp: ListOffsets by time
            found = c.offsets_for_times([TopicPartition(req["topic"], req["partition"], start["at"])], timeout=TIMEOUT)
            tp.offset = found[0].offset
        c.assign([tp])
        out = []
        deadline = time.monotonic() + TIMEOUT
        while len(out) < req["count"]:
            if time.monotonic() > deadline:
                raise Exception("read %d of %d records in %d s" % (len(out), req["count"], TIMEOUT))
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append(record(msg))
        return out
    finally:
        c.close()


def consume_to_end(req):
    """Reads from the beginning until librdkafka's _PARTITION_EOF event."""
    c = consumer(req, **{"enable.partition.eof": True})
    try:
        c.assign([TopicPartition(req["topic"], req["partition"], OFFSET_BEGINNING)])
        out = []
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return {"records": out, "end": msg.offset()}
                raise KafkaException(msg.error())
            out.append(record(msg))
        raise Exception("no end of partition within %d s, %d records read" % (TIMEOUT, len(out)))
    finally:
        c.close()


def member(req):
    """A group member: commits each record synchronously once it has
    reported it, and what it holds when partitions are revoked; leaves the
    group (close) when standard input closes."""
    closed = stdin_closed()
    c = consumer(req, **{"group.id": req["group"], "auto.offset.reset": "earliest",
                         "heartbeat.interval.ms": 300, "session.timeout.ms": 10000})

    def assigned(_, partitions):
        emit({"assigned": [p.partition for p in partitions]})

    def revoked(cons, _):
        try:
            cons.commit(asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:
                emit({"error": "commit on revoke: %s" % e})
        emit({"assigned": []})

    c.subscribe([req["topic"]], on_assign=assigned, on_revoke=revoked)
    try:
        while not closed.is_set():
            msg = c.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                emit({"error": str(msg.error())})
                continue
            emit({"record": record(msg)})
            c.commit(message=msg, asynchronous=False)
    finally:
        c.close()


def stream(req):
    """Produces numbered records, idempotently at acks=all, at most 100
    awaiting their acknowledgement, until standard input closes; then
    waits for every outcome."""
    closed = stdin_closed()
    p = Producer({**base(req), "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "message.timeout.ms": 60000})
    in_flight = [0]

    def delivered(err, msg, seq):
        in_flight[0] -= 1
        if err:
            emit({"seq": seq, "partition": msg.partition(), "offset": -1, "error": str(err)})
        else:
            emit({"seq": seq, "partition": msg.partition(), "offset": msg.offset()})
    seq = 0
    while not closed.is_set():
        if in_flight[0] >= 100:
            p.poll(0.01)
            continue
        p.produce(req["topic"], key=("key-%d" % (seq % 30)).encode(), value=str(seq).encode(),
                  on_delivery=lambda err, msg, seq=seq: delivered(err, msg, seq))
        in_flight[0] += 1
        seq += 1
        p.poll(0)
    if p.flush(60) > 0:
        raise Exception("records still unacknowledged 60 s after the stop")


def transactional_producer(req):
    """A Producer of the request's transactional.id, its transactions
    initialised (InitProducerId)."""
    p = Producer({**base(req), "transactional.id": req["transactional_id"], "linger.ms": 5})
    p.init_transactions(TIMEOUT)
    return p


def transact(req):
    """Runs each transaction: begin_transaction, produce, flush (every
    record acknowledged, so that an aborted one's records are in the log
    too), then commit_transaction or abort_transaction."""
    p = transactional_producer(req)
    acked = []
    for n, txn in enumerate(req["transactions"], 1):
        p.begin_transaction()
        outcomes = [None] * len(txn["records"])
        for i, r in enumerate(txn["records"]):
            def delivered(err, msg, i=i):
                outcomes[i] = err if err else msg
            p.produce(req["topic"], value=raw(r["value"]), key=raw(r["key"]), partition=r["partition"],
                      headers=[(k, raw(v)) for k, v in r["headers"]], on_delivery=delivered)
        if p.flush(TIMEOUT) > 0:
            raise Exception("transaction %d: records still unacknowledged after %d s" % (n, TIMEOUT))
        for i, o in enumerate(outcomes):
            if isinstance(o, KafkaError):
                raise Exception("transaction %d, record %d: %s" % (n, i, o))
            acked.append({"partition": o.partition(), "offset": o.offset()})
        if txn["commit"]:
            p.commit_transaction(TIMEOUT)
        else:
            p.abort_transaction(TIMEOUT)
    return acked


def transform(req):
    """Consumes the input in the group (read_committed, no auto commit) and
    carries each batch that consume() returns over in a transaction: the
    transforms produced, send_offsets_to_transaction with the consumer's
    position and group metadata, commit_transaction -- or, in the run that
    aborts, abort_transaction after the first, records flushed."""
    c = consumer(req, **{"group.id": req["group"], "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "heartbeat.interval.ms": 300, "session.timeout.ms": 10000})
    p = transactional_producer(req)
    try:
        c.subscribe([req["input"]])
        done = 0
        deadline = time.monotonic() + TIMEOUT
        while done < req["count"]:
            if time.monotonic() > deadline:
                raise Exception("%d of %d records carried over in %d s" % (done, req["count"], TIMEOUT))
            msgs = c.consume(num_messages=req["count"] - done, timeout=0.5)
            for msg in msgs:
                if msg.error():
                    raise KafkaException(msg.error())
            if not msgs:
                continue
            p.begin_transaction()
            for msg in msgs:
                p.produce(req["output"], key=msg.key(), value=b"transformed: " + msg.value(), partition=msg.partition(),
                          headers=[("input-offset", str(msg.offset()).encode())])
            consumed = sorted({msg.partition() for msg in msgs})
            positions = c.position([TopicPartition(req["input"], part) for part in consumed])
            p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), TIMEOUT)
            if req["abort"]:
                if p.flush(TIMEOUT) > 0:
                    raise Exception("records still unacknowledged after %d s" % TIMEOUT)
                p.abort_transaction(TIMEOUT)
                return len(msgs)
            p.commit_transaction(TIMEOUT)
            done += len(msgs)
        return done
    finally:
        c.close()


def admin(req):
    return AdminClient(base(req))


def wait(futures):
    for f in futures.values():
        f.result(timeout=TIMEOUT)

# An AdminClient destroyed while its futures are pending fails them
# (_DESTROY): each call below keeps its client in a variable until done.


def create_topic(req):
    a = admin(req)
    wait(a.create_topics([NewTopic(req["topic"], req["partitions"], req["replication_factor"], config=req["configs"])],
                         operation_timeout=10))


def partitions(req):
    a = admin(req)
    md = a.list_topics(topic=req["topic"], timeout=TIMEOUT)
    t = md.topics[req["topic"]]
    if t.error is not None:
        raise KafkaException(t.error)
    return len(t.partitions)


def delete_topic(req):
    a = admin(req)
    wait(a.delete_topics([req["topic"]], operation_timeout=10))


def create_partitions(req):
    a = admin(req)
    wait(a.create_partitions([NewPartitions(req["topic"], req["total"])], operation_timeout=10))


def alter_topic_config(req):
    """AlterConfigs: the legacy, whole-set call."""
    a = admin(req)
    wait(a.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, req["topic"], set_config=req["configs"])]))


def describe(req, restype, name):
    a = admin(req)
    futures = a.describe_configs([ConfigResource(restype, name)])
    entries = list(futures.values())[0].result(timeout=TIMEOUT)
    return {k: {"value": e.value, "is_default": e.is_default} for k, e in entries.items()}


def describe_topic_config(req):
    return describe(req, ConfigResource.Type.TOPIC, req["topic"])


def describe_broker_config(req):
    return describe(req, ConfigResource.Type.BROKER, str(req["broker"]))


def earliest_offset(req):
    """ListOffsets earliest, through the consumer's watermark call."""
    c = consumer(req)
    try:
        low, _ = c.get_watermark_offsets(TopicPartition(req["topic"], req["partition"]), timeout=TIMEOUT)
        return low
    finally:
        c.close()


def describe_cluster(req):
    """The AdminClient of 1.7 describes the cluster with Metadata."""
    a = admin(req)
    md = a.list_topics(timeout=TIMEOUT)
    return {"cluster_id": md.cluster_id, "controller_id": md.controller_id, "brokers": list(md.brokers)}


def not_in(call):
    def op(_):
        raise NotAvailable("confluent-kafka-python 1.7.0 has no %s" % call)
    return op


OPS = {
    "produce": produce, "consume": consume, "consume_to_end": consume_to_end, "member": member, "stream": stream,
    "transact": transact, "transform": transform,
    "create_topic": create_topic, "partitions": partitions, "delete_topic": delete_topic,
    "create_partitions": create_partitions, "alter_topic_config": alter_topic_config,
    "incremental_alter_topic_config": not_in("incremental_alter_configs (2.2.0)"),
    "describe_topic_config": describe_topic_config, "describe_broker_config": describe_broker_config,
    "delete_records": not_in("delete_records (2.4.0)"), "earliest_offset": earliest_offset,
    "describe_cluster": describe_cluster, "describe_log_dirs": not_in("describe_log_dirs"),
    "elect_preferred_leaders": not_in("elect_leaders"), "describe_producers": not_in("describe_producers"),
    "reassign": not_in("alter_partition_reassignments"), "reassigning": not_in("list_partition_reassignments"),
    "offset_for_leader_epoch": not_in("OffsetForLeaderEpoch call"),
}


def main():
    req = json.loads(sys.stdin.readline())
    op = req["op"]
    try:
        result = OPS[op](req)
    except NotAvailable as e:
        emit({"na": str(e)})
        return
    except Exception as e:  # the harness reports it as the cell's reason
        emit({"error": "%s: %s" % (type(e).__name__, e)})
        return
    if op not in ("member", "stream"):
        emit({"result": result})


if __name__ == "__main__":
    main()
