package statuspage

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// serveEvents streams the status document as Server-Sent Events: one
// "status" event at once, then one on every transition (coalesced) and every
// refresh period, until the client leaves or the Handler is closed.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if n := h.nstreams.Add(1); n > int64(h.o.maxStreams) {
		h.nstreams.Add(-1)
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many event streams", http.StatusServiceUnavailable)
		return
	}
	defer h.nstreams.Add(-1)

	wake := make(chan struct{}, 1)
	h.mu.Lock()
	h.streams[wake] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, wake)
		h.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	tick := time.NewTicker(h.o.refresh)
	defer tick.Stop()
	// retry: tells the browser how long to wait before reconnecting.
	if _, err := w.Write([]byte("retry: 2000\n\n")); err != nil {
		return
	}
	for {
		// A client that stops reading must not hold its stream (and its
		// slot in WithMaxStreams) forever, nor outlive Close: every write
		// has a deadline.
		if err := rc.SetWriteDeadline(time.Now().Add(h.o.writeTO)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
		if err := h.writeEvent(w); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.closed:
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

func (h *Handler) writeEvent(w http.ResponseWriter) error {
	b, err := json.Marshal(h.Document())
	if err != nil {
		return err
	}
	// JSON has no raw newlines, so one data: line carries the document.
	buf := make([]byte, 0, len(b)+32)
	buf = append(buf, "event: status\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	_, err = w.Write(buf)
	return err
}
