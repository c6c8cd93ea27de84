package statusworker

import (
	"errors"
	"net/http"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// apiFeeds answers GET /feeds: every standing feed's record.
func (w *StatusWorker) apiFeeds(rw http.ResponseWriter, r *http.Request) {
	feeds, err := w.cfg.Topology.Feeds().List(r.Context())
	if err != nil {
		writeError(rw, http.StatusServiceUnavailable, "the feeds cannot be read: "+redact.String(err.Error()))
		return
	}
	if feeds == nil {
		feeds = []messages.FeedRecord{}
	}
	writeJSON(rw, http.StatusOK, feeds)
}

// apiFeed answers GET /feeds/{feed}: the feed's record and the states of
// its runs.
func (w *StatusWorker) apiFeed(rw http.ResponseWriter, r *http.Request) {
	feed := r.PathValue("feed")
	if err := messages.ValidateFeedName(feed); err != nil {
		writeError(rw, http.StatusBadRequest, err.Error())
		return
	}
	v, err := w.feedView(r.Context(), feed)
	switch {
	case errors.Is(err, topology.ErrFeedNotFound):
		writeError(rw, http.StatusNotFound, "no feed "+feed)
	case err != nil:
		writeError(rw, http.StatusServiceUnavailable, "the feed cannot be read: "+redact.String(err.Error()))
	default:
		writeJSON(rw, http.StatusOK, v)
	}
}
