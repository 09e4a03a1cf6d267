// Package opsreport renders what the operator commands print (payments
// outbox stats and partitions, payments apikey list, ledger inbox stats, dlq
// redrive and reconcile), the tables among it aligned:
// presentation, kept out of cmd's wiring and out of the stores, which return
// data. The cmd tests pin the output.
package opsreport

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
)

// OutboxPartitions prints the partition count n and which relay replica
// holds each partition: owners[p] is partition p's holder, "" for none.
func OutboxPartitions(out io.Writer, n int, owners []string) error {
	held := map[string][]int{}
	var free []int
	for p, o := range owners {
		if o == "" {
			free = append(free, p)
		} else {
			held[o] = append(held[o], p)
		}
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "partitions\t%d\n", n)
	fmt.Fprintf(w, "relays holding leases\t%d\n", len(held))
	fmt.Fprintf(w, "partitions nobody holds\t%d\n", len(free))
	if len(held) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "RELAY\tPARTITIONS")
		names := make([]string, 0, len(held))
		for o := range held {
			names = append(names, o)
		}
		slices.Sort(names)
		for _, o := range names {
			fmt.Fprintf(w, "%s\t%d: %s\n", o, len(held[o]), partitionList(held[o]))
		}
	}
	return w.Flush()
}

// partitionList prints partitions as ranges: 0-15,32.
func partitionList(ps []int) string {
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", ps[i], ps[j])
		} else {
			fmt.Fprintf(&b, "%d", ps[i])
		}
		i = j + 1
	}
	return b.String()
}

// OutboxStats prints the outbox backlog: in all, per event type, and the ten
// partitions (ordered mode's, application/outbox/partition) whose oldest
// pending row is the oldest.
func OutboxStats(out io.Writer, st outbox.Stats, b partition.Backlog) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "pending\t%d\n", st.Pending)
	fmt.Fprintf(w, "dead\t%d\n", st.Dead)
	fmt.Fprintf(w, "oldest pending age\t%s\n", st.OldestPending.Round(time.Millisecond))
	if len(st.ByType) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "TYPE\tPENDING\tDEAD\tOLDEST PENDING")
		for _, t := range st.ByType {
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", t.Type, t.Pending, t.Dead, t.OldestPending.Round(time.Millisecond))
		}
	}
	if len(b.ByPartition) > 0 {
		// The oldest first: a stuck partition is at the top.
		ps := slices.Clone(b.ByPartition)
		slices.SortStableFunc(ps, func(a, b partition.PartitionBacklog) int { return cmp.Compare(b.OldestPending, a.OldestPending) })
		fmt.Fprintln(w)
		fmt.Fprintln(w, "PARTITION\tPENDING\tOLDEST PENDING")
		for i, p := range ps {
			if i == 10 {
				fmt.Fprintf(w, "… %d more\t\t\n", len(ps)-10)
				break
			}
			fmt.Fprintf(w, "%d\t%d\t%s\n", p.Partition, p.Pending, p.OldestPending.Round(time.Millisecond))
		}
	}
	return w.Flush()
}

// APIKeys prints the keys' ids, public prefixes, owners and times; never a
// key.
func APIKeys(out io.Writer, keys []access.StoredKey) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tPREFIX\tFOR\tNAME\tCREATED\tLAST USED\tREVOKED")
	for _, k := range keys {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix(), KeyOwner(k), k.Name, when(k.CreatedAt), when(k.LastUsedAt), when(k.RevokedAt))
	}
	return w.Flush()
}

// KeyOwner names whom key k acts for.
func KeyOwner(k access.StoredKey) string {
	if k.Platform {
		return "the platform"
	}
	return "merchant " + k.MerchantID
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// InboxStats prints the inbox's backlog: pending rows, the oldest one's
// age, parked rows, and rows of types this version does not apply.
func InboxStats(out io.Writer, st inbox.Stats) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "pending\t%d\n", st.Pending)
	fmt.Fprintf(w, "oldest pending age\t%s\n", st.OldestPending.Round(time.Millisecond))
	fmt.Fprintf(w, "parked\t%d\n", st.Parked)
	fmt.Fprintf(w, "unhandled\t%d\t(of types this version does not apply, kept for one that does)\n", st.Unhandled)
	return w.Flush()
}

// Redrive prints what `ledger dlq redrive` did: how it moved the messages
// (rep.Mode), how many went back to queueURL, and how many a failed send
// left in the DLQ.
func Redrive(out io.Writer, rep sqs.RedriveReport, queueURL string) error {
	fmt.Fprintf(out, "redrive (%s): %d messages moved back to %s", rep.Mode, rep.Moved, queueURL)
	if rep.SendFailed > 0 {
		fmt.Fprintf(out, ", %d left in the DLQ (send failed)", rep.SendFailed)
	}
	_, err := fmt.Fprintln(out)
	return err
}

// Divergences prints what `ledger reconcile` found: a DIVERGENCE line for
// each, or one line saying the ledger matches the payments database.
func Divergences(out io.Writer, divs []bookkeeping.Divergence) error {
	for _, d := range divs {
		if _, err := fmt.Fprintln(out, "DIVERGENCE", d); err != nil {
			return err
		}
	}
	if len(divs) == 0 {
		_, err := fmt.Fprintln(out, "ok: the ledger matches the payments database")
		return err
	}
	return nil
}
