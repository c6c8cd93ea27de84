package statusworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// rebuild replays the status stream, from its first event up to the last
// one stored when rebuild starts, into the ledger, before the durable
// consumer starts. The durable consumer then continues from its ack floor;
// the events both see are applied twice, which the versioned writes make
// harmless (the second is stale). Malformed events are skipped: the durable
// consumer already terminated them and recorded why.
func (w *StatusWorker) rebuild(ctx context.Context) error {
	w.rebuilding.Store(true)
	defer w.rebuilding.Store(false)
	start := time.Now()
	js := w.cfg.Topology.JetStream()
	st, err := js.Stream(ctx, topology.StreamStatus)
	if err != nil {
		return fmt.Errorf("statusworker: rebuild: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("statusworker: rebuild: %w", err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		w.log.Info("ledger rebuild: the status stream is empty")
		return nil
	}
	w.rebuildMsg.Store(fmt.Sprintf("replaying up to %d status messages", info.State.Msgs))
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{messages.AllStatus},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("statusworker: rebuild: %w", err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(2 * w.cfg.RebuildBatch))
	if err != nil {
		return fmt.Errorf("statusworker: rebuild: %w", err)
	}
	defer it.Stop()

	var (
		batch              []jobresults.Entry
		seen, skipped, app int
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := w.writeRebuild(ctx, batch)
		app += n
		if err == nil {
			w.met.events.WithLabelValues("applied").Add(float64(n))
			w.met.events.WithLabelValues("stale").Add(float64(len(batch) - n))
		}
		batch = batch[:0]
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := it.Next(jetstream.NextMaxWait(2 * time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
				// Nothing came: everything up to last may have aged out
				// meanwhile. Stop when the stream holds nothing more of it.
				done, ierr := w.rebuildDone(ctx, st, last)
				if ierr != nil {
					return ierr
				}
				if done {
					break
				}
				continue
			}
			return fmt.Errorf("statusworker: rebuild: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		seq := meta.Sequence.Stream
		seen++
		k := 0
		for ev, err := range messages.StatusEvents(m.Subject(), m.Data()) {
			if err == nil {
				batch = append(batch, toEntry(ev, messages.StatusVersion(seq, k)))
			} else {
				skipped++
			}
			k++
		}
		if len(batch) >= w.cfg.RebuildBatch {
			if err := flush(); err != nil {
				return err
			}
			w.rebuildMsg.Store(fmt.Sprintf("replayed %d of up to %d status messages", seen, info.State.Msgs))
		}
		if seq >= last {
			break
		}
	}
	if err := flush(); err != nil {
		return err
	}
	w.log.Info("ledger rebuilt from the status stream", zap.Int("messages", seen), zap.Int("applied", app),
		zap.Int("malformed_skipped", skipped), zap.Uint64("last_seq", last), zap.Duration("took", time.Since(start)))
	return nil
}

// writeRebuild writes one rebuild batch, retrying transient errors for as
// long as ctx lasts (a ledger that cannot be written cannot be rebuilt).
func (w *StatusWorker) writeRebuild(ctx context.Context, batch []jobresults.Entry) (int, error) {
	for {
		n, err := w.write(ctx, batch)
		if err == nil {
			return n, nil
		}
		if ctx.Err() != nil || !errors.Is(err, jobresults.ErrTransient) {
			return n, fmt.Errorf("statusworker: rebuild: %w", err)
		}
	}
}

// rebuildDone reports whether the stream no longer holds any event up to
// last that the rebuild has not seen (they aged out while it waited).
func (w *StatusWorker) rebuildDone(ctx context.Context, st jetstream.Stream, last uint64) (bool, error) {
	info, err := st.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("statusworker: rebuild: %w", err)
	}
	return info.State.Msgs == 0 || info.State.FirstSeq > last, nil
}
