package topology

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Stream names.
const (
	StreamRuns      = "OXY_RUNS"
	StreamPayloads  = "OXY_PAYLOADS"
	StreamSubmitted = "OXY_SUBMITTED"
	StreamDone      = "OXY_DONE"
	StreamStatus    = "OXY_STATUS"
)

// Key-value bucket names.
const (
	BucketClaims = "oxy_claims"
	BucketRuns   = "oxy_runs"
)

// Stage names a stage. It is also the name of the stage's durable consumer
// and the Type of the Actor the stage publishes as.
type Stage string

// The stages that consume a stream.
const (
	Submitter    Stage = "submitter"
	Poller       Stage = "poller"
	Writer       Stage = "writer"
	StatusWorker Stage = "statusworker"
)

// stageTable is every stage's default consumer, in pipeline order: the one
// list Stages and DefaultConsumer read (the table in the package
// documentation). A new stage is one more entry here.
var stageTable = func() []ConsumerSettings {
	fast := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}
	slow := []time.Duration{time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute}
	return []ConsumerSettings{
		{Stage: Submitter, Stream: StreamPayloads, FilterSubject: messages.AllPayloads, InputDataType: oxytype.DataPayload,
			AckWait: time.Minute, MaxAckPending: 5000, MaxDeliver: 10, RetryBackoff: slow, HandlerTimeout: 2 * time.Minute},
		{Stage: Poller, Stream: StreamSubmitted, FilterSubject: messages.AllSubmitted, InputDataType: oxytype.DataSubmitted,
			AckWait: 30 * time.Second, MaxAckPending: 20000, MaxDeliver: 2000, RetryBackoff: fast, HandlerTimeout: 30 * time.Second},
		{Stage: Writer, Stream: StreamDone, FilterSubject: messages.AllDone, InputDataType: oxytype.DataDone,
			AckWait: time.Minute, MaxAckPending: 256, MaxDeliver: 10, RetryBackoff: slow, HandlerTimeout: 5 * time.Minute},
		{Stage: StatusWorker, Stream: StreamStatus, FilterSubject: messages.AllStatus, InputDataType: oxytype.DataStatus,
			AckWait: 30 * time.Second, MaxAckPending: 10000, MaxDeliver: 20, RetryBackoff: fast, HandlerTimeout: 30 * time.Second},
	}
}()

// Stages lists the stages in pipeline order.
func Stages() []Stage {
	out := make([]Stage, len(stageTable))
	for i, s := range stageTable {
		out[i] = s.Stage
	}
	return out
}

// ConsumerSettings describes one stage's durable consumer and the limits the
// stage runtime applies to it. Start from [DefaultConsumer] and change what
// you need.
type ConsumerSettings struct {
	// Stage is the consumer's name.
	Stage Stage
	// Stream is the stream the consumer reads.
	Stream string
	// FilterSubject selects the stream's subjects (all of them by default).
	FilterSubject string
	// InputDataType is the data type of the messages the stage consumes: the
	// data type at which the runtime records their failures.
	InputDataType oxytype.DataType
	// AckWait is how long the server waits for an ack or a heartbeat before
	// redelivering.
	AckWait time.Duration
	// MaxAckPending bounds the messages delivered and not yet acked, across
	// all replicas (delayed redeliveries included).
	MaxAckPending int
	// MaxDeliver is the delivery count after which the runtime dead-letters a
	// message (0: never). The server itself never stops delivering.
	MaxDeliver int
	// RetryBackoff is the NakWithDelay schedule for unclassified errors,
	// indexed by delivery count; the last entry repeats.
	RetryBackoff []time.Duration
	// HandlerTimeout bounds one handler call.
	HandlerTimeout time.Duration
}

// DefaultConsumer returns the default settings of a stage's consumer (the
// table in the package documentation), or an error for an unknown stage.
func DefaultConsumer(stage Stage) (ConsumerSettings, error) {
	for _, s := range stageTable {
		if s.Stage == stage {
			s.RetryBackoff = slices.Clone(s.RetryBackoff)
			return s, nil
		}
	}
	return ConsumerSettings{}, fmt.Errorf("topology: unknown stage %q (want one of %v)", stage, Stages())
}

// Validate checks that the settings can be used.
func (s ConsumerSettings) Validate() error {
	switch {
	case s.Stage == "":
		return errors.New("topology: consumer settings: Stage is empty")
	case s.Stream == "":
		return fmt.Errorf("topology: consumer %s: Stream is empty", s.Stage)
	case s.InputDataType == "":
		return fmt.Errorf("topology: consumer %s: InputDataType is empty", s.Stage)
	case s.AckWait < 100*time.Millisecond:
		return fmt.Errorf("topology: consumer %s: AckWait %v is below 100ms", s.Stage, s.AckWait)
	case s.MaxAckPending < 1:
		return fmt.Errorf("topology: consumer %s: MaxAckPending %d is below 1", s.Stage, s.MaxAckPending)
	case s.MaxDeliver < 0:
		return fmt.Errorf("topology: consumer %s: MaxDeliver %d is negative (0 means no limit)", s.Stage, s.MaxDeliver)
	case len(s.RetryBackoff) == 0:
		return fmt.Errorf("topology: consumer %s: RetryBackoff is empty", s.Stage)
	case s.HandlerTimeout <= 0:
		return fmt.Errorf("topology: consumer %s: HandlerTimeout must be positive", s.Stage)
	}
	for _, d := range s.RetryBackoff {
		if d <= 0 {
			return fmt.Errorf("topology: consumer %s: RetryBackoff has a non-positive delay %v", s.Stage, d)
		}
	}
	return nil
}
