package degrade

import (
	"embed"
	"strings"
	"sync"
	"text/template"
	"unicode/utf8"
)

// MaxGuidanceBytes bounds the length in bytes of a payload's guidance.
const MaxGuidanceBytes = 300

// Guidance variants, the second index of Builder.guidance.
const (
	advisory = 0 // short-circuits this turn are below the limit
	terminal = 1 // the limit is reached: stop calling the tool
)

//go:embed templates/guidance.tmpl
var templateFS embed.FS

// guidanceTemplates parses the embedded templates once, on first use. The
// templates are part of the binary and tested, so a parse error is a bug.
var guidanceTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("guidance").ParseFS(templateFS, "templates/guidance.tmpl"))
})

// guidanceData is the data every guidance template is executed with.
type guidanceData struct {
	Tool       string // SafeName of the tool
	Dependency string // SafeName of the dependency
	Cause      string // the reason's cause phrase, for terminal variants
}

// renderGuidance returns the advisory and terminal guidance for the reason at
// index ri, for an already sanitised tool and dependency name.
func renderGuidance(ri int, tool, dep string) (adv, term string) {
	name := string(allReasons[ri])
	d := guidanceData{Tool: tool, Dependency: dep}
	adv = execute(name+".advisory", d)
	d.Cause = execute(name+".cause", d)
	term = execute("terminal."+family(ri).String(), d)
	return adv, term
}

// execute runs the named template and normalises its white space. The
// result is capped at MaxGuidanceBytes as a last resort; the package's tests
// keep every template well under the cap with the longest names.
func execute(name string, d guidanceData) string {
	var b strings.Builder
	if err := guidanceTemplates().ExecuteTemplate(&b, name, d); err != nil {
		panic("degrade: guidance template " + name + ": " + err.Error())
	}
	s := strings.Join(strings.Fields(b.String()), " ")
	return truncateUTF8(s, MaxGuidanceBytes)
}

// truncateUTF8 returns the longest prefix of s that is at most n bytes and
// ends on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
