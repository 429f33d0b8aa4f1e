package adkweb_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/adkbreaker/adkbreaker/adkv1/statuspage/adkweb"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// TestMountsBesideADKRoutes sets the sublauncher up on a router the way
// ADK's web launcher does and serves the page and its document from it.
func TestMountsBesideADKRoutes(t *testing.T) {
	reg := registry.MustNew()
	if err := reg.Isolate("billing-api"); err != nil {
		t.Fatal(err)
	}
	page, err := statuspage.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	sl := adkweb.New(page)
	if rest, err := sl.Parse([]string{"-adkbreaker_path", "/ops/breakers", "api"}); err != nil || len(rest) != 1 || rest[0] != "api" {
		t.Fatalf("Parse = %v, %v", rest, err)
	}
	router := mux.NewRouter()
	router.PathPrefix("/api/").HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("adk api")) })
	if err := sl.SetupSubrouters(router, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(router)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/ops/breakers/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var d statuspage.Document
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(d.Dependencies) != 1 || d.Dependencies[0].State != "open" {
		t.Errorf("document through the sublauncher = %+v", d.Dependencies)
	}
	resp, err = http.Get(srv.URL + "/ops/breakers") // redirected to the page
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ops/breakers/" {
		t.Errorf("GET /ops/breakers ended at %s with %d", resp.Request.URL.Path, resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/ops/breakers/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	nonce, ok := strings.CutPrefix(regexp.MustCompile(`script-src 'nonce-[^']+'`).FindString(csp), "script-src 'nonce-")
	if strings.Contains(csp, "unsafe-inline") || !ok || !strings.Contains(string(body), `<script nonce="`+strings.TrimSuffix(nonce, "'")+`">`) {
		t.Errorf("the page through the sublauncher: CSP %q does not admit its script by nonce alone", csp)
	}
	var msg string
	sl.UserMessage("http://localhost:8080", func(v ...any) { msg = v[0].(string) })
	if !strings.Contains(msg, "http://localhost:8080/ops/breakers/") {
		t.Errorf("UserMessage = %q", msg)
	}
	root := adkweb.New(page)
	if _, err := root.Parse([]string{"-adkbreaker_path", "/"}); err != nil {
		t.Fatal(err)
	}
	if err := root.SetupSubrouters(mux.NewRouter(), nil); err == nil {
		t.Error("mounting the page at / was accepted: it would hide ADK's own routes")
	}
}
