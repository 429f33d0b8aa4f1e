// Package adkweb mounts the adkbreaker status page in ADK's web launcher, as
// a sublauncher beside ADK's own web UI and REST API:
//
//	page, _ := statuspage.New(reg)
//	l := full.NewLauncher() // or compose your own:
//	l = universal.NewLauncher(console.NewLauncher(),
//		web.NewLauncher(webui.NewLauncher(), api.NewLauncher(), adkweb.New(page)))
//	// go run . web webui api adkbreaker
//
// The page is then served at /adkbreaker/ (flag -adkbreaker_path) on the
// launcher's port. It lives in its own package so that the statuspage
// package does not import ADK's launcher and its router.
package adkweb

import (
	"flag"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
	"google.golang.org/adk/cmd/launcher"
	"google.golang.org/adk/cmd/launcher/web"
)

// DefaultPath is where the page is mounted unless -adkbreaker_path says
// otherwise.
const DefaultPath = "/adkbreaker/"

type sublauncher struct {
	page  http.Handler
	flags *flag.FlagSet
	path  string
}

// New returns a web.Sublauncher that serves page (a *statuspage.Handler, or
// any handler that expects its mount prefix stripped) under DefaultPath.
func New(page http.Handler) web.Sublauncher {
	s := &sublauncher{page: page, flags: flag.NewFlagSet("adkbreaker", flag.ContinueOnError)}
	s.flags.StringVar(&s.path, "adkbreaker_path", DefaultPath, "path prefix of the adkbreaker status page")
	return s
}

func (s *sublauncher) Keyword() string { return "adkbreaker" }

func (s *sublauncher) Parse(args []string) ([]string, error) {
	if err := s.flags.Parse(args); err != nil {
		return nil, fmt.Errorf("failed to parse adkbreaker flags: %w", err)
	}
	return s.flags.Args(), nil
}

func (s *sublauncher) CommandLineSyntax() string {
	var b strings.Builder
	s.flags.SetOutput(&b)
	s.flags.PrintDefaults()
	return b.String()
}

func (s *sublauncher) SimpleDescription() string {
	return "serves the adkbreaker status page: circuit breaker state of every dependency, live"
}

// SetupSubrouters mounts the page under the configured prefix.
func (s *sublauncher) SetupSubrouters(router *mux.Router, _ *launcher.Config) error {
	prefix := "/" + strings.Trim(s.path, "/")
	if prefix == "/" {
		return fmt.Errorf("adkbreaker: -adkbreaker_path must not be the root")
	}
	router.Path(prefix).Handler(http.RedirectHandler(prefix+"/", http.StatusMovedPermanently))
	router.PathPrefix(prefix + "/").Handler(http.StripPrefix(prefix, s.page))
	return nil
}

func (s *sublauncher) UserMessage(webURL string, printer func(v ...any)) {
	printer(fmt.Sprintf("       adkbreaker:  status page at %s/%s/", webURL, strings.Trim(s.path, "/")))
}
