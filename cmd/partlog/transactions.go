package main

// transactions lists and describes transactions, as Kafka's
// kafka-transactions.sh does.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/partlog/partlog/transport"
)

const transactionsHelp = `Usage: partlog transactions <list|describe> --dir DIR [flags]

Transactions lists the transactional ids the node's transaction
coordinators know, and describes one, as Kafka's kafka-transactions.sh
does:

  partlog transactions list --dir D
  partlog transactions describe --dir D --transactional-id ID

List prints each transactional id with the node that coordinates it, its
producer id and its transaction's state. Describe prints the coordinator,
the producer id and epoch, the state, the transaction timeout, when the
ongoing transaction started and how long it has run, and its partitions.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP; on a
cluster, list asks every node.
`

// runTransactions runs "partlog transactions".
func runTransactions(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("transactions")
	where := addTargetFlags(fs)
	id := fs.String("transactional-id", "", "describe: the `transactional id`")
	actions := addActionFlags(fs, "transactions", "list", "describe")
	operands, err := parseFlags(fs, args, transactionsHelp, stdout)
	if err != nil {
		return err
	}
	action, err := actions.only(operands)
	if err != nil {
		return err
	}
	if action == "describe" && *id == "" {
		return usageErrorf("transactions", "describe needs --transactional-id")
	}
	t, err := openTarget("transactions", where, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	ctx := context.Background()
	switch action {
	case "list":
		err = listTransactions(ctx, t, stdout)
	case "describe":
		err = describeTransaction(ctx, t, *id, stdout)
	}
	if err != nil {
		return fmt.Errorf("transactions: %w", err)
	}
	return t.close()
}

// txnClient returns a node's transaction calls.
func txnClient(c any, where string) (transport.TxnClient, error) {
	if tc, ok := c.(transport.TxnClient); ok {
		return tc, nil
	}
	return nil, fmt.Errorf("%s does not answer transaction requests", where)
}

// listTransactions prints the transactional ids every node coordinates.
func listTransactions(ctx context.Context, t *target, w io.Writer) error {
	ids, err := t.brokerIDs(ctx)
	if err != nil {
		return err
	}
	type row struct {
		coordinator int32
		txn         transport.ListedTransaction
	}
	var rows []row
	for _, id := range ids {
		admin, closeAdmin, err := t.brokerAdmin(ctx, id)
		if err != nil {
			return err
		}
		tc, err := txnClient(admin, t.where())
		if err == nil {
			var resp *transport.ListTransactionsResponse
			if resp, err = tc.ListTransactions(ctx, &transport.ListTransactionsRequest{}); err == nil {
				err = resp.Err
				for _, lt := range resp.Transactions {
					rows = append(rows, row{id, lt})
				}
			}
		}
		closeAdmin()
		if err != nil {
			return fmt.Errorf("node %d: %w", id, err)
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.txn.TransactionalID, b.txn.TransactionalID) })
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	fmt.Fprintln(tw, "TransactionalId\tCoordinator\tProducerId\tTransactionState")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.txn.TransactionalID, r.coordinator, r.txn.ProducerID, r.txn.State)
	}
	return tw.Flush()
}

// describeTransaction prints what the coordinator of id knows of it.
func describeTransaction(ctx context.Context, t *target, id string, w io.Writer) error {
	tc, err := txnClient(t.client(), t.where())
	if err != nil {
		return err
	}
	fc, err := tc.FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: id, KeyType: transport.CoordinatorTransaction})
	if err == nil {
		err = fc.Err
	}
	if err != nil {
		return fmt.Errorf("finding the coordinator of %q: %w", id, err)
	}
	resp, err := tc.DescribeTransactions(ctx, &transport.DescribeTransactionsRequest{TransactionalIDs: []string{id}})
	if err != nil {
		return err
	}
	if len(resp.Transactions) != 1 {
		return fmt.Errorf("the coordinator answered %d transactions for one id", len(resp.Transactions))
	}
	d := resp.Transactions[0]
	if d.Err != nil {
		return fmt.Errorf("%q: %w", id, d.Err)
	}
	start, duration := "None", "None"
	if d.StartTimestamp >= 0 {
		start = strconv.FormatInt(d.StartTimestamp, 10)
		duration = strconv.FormatInt(time.Now().UnixMilli()-d.StartTimestamp, 10)
	}
	var parts []string
	for _, tp := range d.Partitions {
		parts = append(parts, tp.String())
	}
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	fmt.Fprintln(tw, "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions")
	fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", fc.NodeID, d.TransactionalID, d.ProducerID, d.ProducerEpoch, d.State,
		d.TransactionTimeout.Milliseconds(), start, duration, strings.Join(parts, ","))
	return tw.Flush()
}
