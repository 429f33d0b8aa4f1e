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
//
// Every stream sends the same event for a version of the document
// (currentFrame): the document is rendered and encoded once per transition
// or refresh period, however many streams are open, not once per stream.
// A stream woken with nothing new to send sends nothing.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
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

	// retry: tells the browser how long to wait before reconnecting.
	if _, err := w.Write([]byte("retry: 2000\n\n")); err != nil {
		return
	}
	var sent *frame
	for {
		// The first event is rendered after the stream arrived, as a
		// request for the document would be; later ones are the current
		// version's.
		f, err := h.currentFrame(sent == nil, arrived)
		if err != nil {
			return
		}
		if f != sent {
			// A client that stops reading must not hold its stream (and
			// its slot in WithMaxStreams) forever, nor outlive Close:
			// every write has a deadline.
			if err := rc.SetWriteDeadline(time.Now().Add(h.o.writeTO)); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return
			}
			if _, err := w.Write(f.event); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			sent = f
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.closed:
			return
		case <-wake:
		}
	}
}

// frame is one rendered "status" event, shared by every stream.
type frame struct {
	version  uint64    // h.version when it was rendered
	rendered time.Time // when rendering started
	event    []byte    // never modified once made
}

// currentFrame returns the event for the current version of the document,
// rendering it if no stream has yet; fresh also asks for one rendered at or
// after since (a stream's first event). Streams that ask at once wait for
// one rendering and share it.
func (h *Handler) currentFrame(fresh bool, since time.Time) (*frame, error) {
	h.fmu.Lock()
	defer h.fmu.Unlock()
	v := h.version.Load()
	if f := h.frame; f != nil && f.version == v && (!fresh || !f.rendered.Before(since)) {
		return f, nil
	}
	f := &frame{version: v, rendered: time.Now()}
	b, err := json.Marshal(h.Document())
	if err != nil {
		return nil, err
	}
	// JSON has no raw newlines, so one data: line carries the document.
	buf := make([]byte, 0, len(b)+32)
	buf = append(buf, "event: status\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	f.event = buf
	h.frame = f
	return f, nil
}
