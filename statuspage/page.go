package statuspage

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"time"
)

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct":           func(p *float64) float64 { return *p * 100 },
	"join":          strings.Join,
	"stamp":         stamp,
	"rfc3339":       func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"secs":          secs,
	"plural":        plural,
	"throttleTitle": throttleTitle,
	"policy":        policyText,
	"tripWindow":    tripWindow,
	"throttling":    throttling,
}).Parse(pageHTML))

// throttling is a dependency's throttle badge ("throttling 33 %"), or ""
// for none or one that sheds nothing now (the script's throttling).
func throttling(t *Throttle) string {
	if t == nil || !(t.RejectProbability > 0) {
		return ""
	}
	n := math.Round(t.RejectProbability * 100)
	if n < 1 {
		return "throttling <1 %"
	}
	return fmt.Sprintf("throttling %.0f %%", n)
}

// throttleTitle is the badge's tooltip (the script's throttleTitle).
func throttleTitle(t *Throttle) string {
	return fmt.Sprintf("adaptive throttle: %s sent straight to the next endpoint", plural(t.Rejections, "call", "calls"))
}

// plural is n with its noun; n is any integer.
func plural(n any, one, many string) string {
	if s := fmt.Sprint(n); s != "1" {
		return s + " " + many
	}
	return "1 " + one
}

// stamp is a time as the page shows it without JavaScript: UTC, named.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") }

// secs is the page's duration format (the script's secs).
func secs(s float64) string {
	n := int64(math.Max(0, math.Round(s)))
	switch {
	case n < 120:
		return fmt.Sprintf("%d s", n)
	case n < 7200:
		return fmt.Sprintf("%d min %d s", n/60, n%60)
	}
	return fmt.Sprintf("%d h %d min", n/3600, n%3600/60)
}

// policyText says when a breaker trips and how long it holds (the
// script's policyText).
func policyText(p PolicyInfo) string {
	var parts []string
	if p.ConsecutiveFailures > 0 {
		parts = append(parts, fmt.Sprintf("%d failures in a row", p.ConsecutiveFailures))
	}
	if p.FailureRate > 0 {
		over := secs(p.WindowSeconds)
		if p.CountWindow > 0 {
			over = fmt.Sprintf("the last %d calls", p.CountWindow)
		}
		parts = append(parts, fmt.Sprintf("%.0f %% failed of ≥ %d calls in %s", math.Round(p.FailureRate*100), p.MinCalls, over))
	}
	s := strings.Join(parts, " or ")
	if s == "" {
		s = "never on failures"
	}
	s += "; holds " + secs(p.OpenSeconds)
	if p.MaxOpenSeconds > p.OpenSeconds {
		s += " (up to " + secs(p.MaxOpenSeconds) + ")"
	}
	if p.MaxConcurrent > 0 {
		s += fmt.Sprintf("; bulkhead %d", p.MaxConcurrent)
	}
	return s
}

// tripWindow is the window that tripped d while the outage it began lasts
// (the open state's own counts start again at zero), else nil.
func tripWindow(d Dependency) *Window {
	if d.State == "closed" || d.Isolated || d.LastTrip == nil {
		return nil
	}
	return &d.LastTrip.Window
}

type pageView struct {
	Title       string
	Doc         Document
	Nonce       string
	NotClosed   int
	Tripped     []Dependency // not closed
	Transitions []Transition // newest first, at most 50
}

// servePage renders the page with the current document, so it is complete
// without JavaScript; the script then keeps it live over /events.
func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	var nb [18]byte
	if _, err := rand.Read(nb[:]); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	v := pageView{Title: h.o.title, Doc: h.Document(), Nonce: base64.RawURLEncoding.EncodeToString(nb[:])}
	for _, d := range v.Doc.Dependencies {
		if d.State != "closed" {
			v.NotClosed++
			v.Tripped = append(v.Tripped, d)
		}
	}
	for i := len(v.Doc.Transitions) - 1; i >= 0 && len(v.Transitions) < 50; i-- {
		v.Transitions = append(v.Transitions, v.Doc.Transitions[i])
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, v); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// Everything is inline and runs only with this response's nonce: an
	// injected script or inline handler does not run, and nothing loads
	// from elsewhere.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+v.Nonce+"'; style-src 'nonce-"+v.Nonce+"'; "+
		"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'")
	_, _ = w.Write(buf.Bytes())
}
