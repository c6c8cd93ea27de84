package submitter

import (
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// LoseClaimAnswer makes s behave as after a claim create for (run, doc)
// whose answer was lost and could not be read back: s wrote a claim
// claimed at `at` and does not know it.
func LoseClaimAnswer(s *Submitter, run, doc string, at time.Time) {
	s.unconfirmed.remember(messages.ClaimKey(run, doc), at)
}
