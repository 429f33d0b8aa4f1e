package statuspage

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
)

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct": func(p *float64) float64 { return *p * 100 },
}).Parse(pageHTML))

// servePage renders the page with the current document, so it is complete
// without JavaScript; the script then keeps it live over /events.
func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, struct {
		Title string
		Doc   Document
	}{h.o.title, h.Document()}); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// Everything is inline; nothing may load from elsewhere.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'")
	_, _ = w.Write(buf.Bytes())
}
