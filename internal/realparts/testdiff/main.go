// Command testdiff compares two `go test -json` runs of the same packages,
// one without and one with a change (scripts/realparts/adk-own-tests.sh runs
// ADK's own tests without and with adkbreaker's plugin), and lists every
// test that passed without and failed with it.
//
//	testdiff -without a.json -with b.json [-regressions out.txt]
//
// It prints a summary line and one line per regression ("package TestName",
// top-level test names, for a rerun with -run). It exits 1 on a regression,
// and 2 when a package of the run with the change failed without running
// any test (a build failure would otherwise hide every test of it).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type run struct {
	tests    map[string]string // "pkg\tTest/sub" → pass, fail or skip
	pkgs     map[string]string // package → pass, fail, skip
	pkgTests map[string]int    // package → tests that ended
	output   map[string]*strings.Builder
}

func read(path string) (*run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &run{tests: map[string]string{}, pkgs: map[string]string{}, pkgTests: map[string]int{}, output: map[string]*strings.Builder{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // build output outside JSON
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			if e.Test != "" {
				r.tests[e.Package+"\t"+e.Test] = e.Action
				r.pkgTests[e.Package]++
			} else {
				r.pkgs[e.Package] = e.Action
			}
		case "output":
			if e.Test == "" {
				b := r.output[e.Package]
				if b == nil {
					b = &strings.Builder{}
					r.output[e.Package] = b
				}
				if b.Len() < 4096 {
					b.WriteString(e.Output)
				}
			}
		}
	}
	return r, sc.Err()
}

func main() {
	without := flag.String("without", "", "go test -json output of the run without the change")
	with := flag.String("with", "", "go test -json output of the run with the change")
	regOut := flag.String("regressions", "", "write the regressing top-level tests here, one \"package Test\" a line")
	label := flag.String("label", "", "label of the summary line")
	flag.Parse()
	a, err := read(*without)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testdiff:", err)
		os.Exit(3)
	}
	b, err := read(*with)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testdiff:", err)
		os.Exit(3)
	}
	var regs, fixed, bothFail []string
	top := map[string]bool{}
	passBoth := 0
	for k, av := range a.tests {
		bv, ok := b.tests[k]
		switch {
		case !ok:
			if av == "pass" {
				regs = append(regs, k+" (did not run with the change)")
				top[topLevel(k)] = true
			}
		case av == "pass" && bv == "fail":
			regs = append(regs, k)
			top[topLevel(k)] = true
		case av == "fail" && bv == "pass":
			fixed = append(fixed, k)
		case av == "fail" && bv == "fail":
			bothFail = append(bothFail, k)
		case av == "pass" && bv == "pass":
			passBoth++
		}
	}
	var broken []string
	for p, v := range b.pkgs {
		if v == "fail" && b.pkgTests[p] == 0 {
			broken = append(broken, p)
		}
	}
	sort.Strings(regs)
	sort.Strings(fixed)
	sort.Strings(bothFail)
	sort.Strings(broken)
	fmt.Printf("testdiff%s: %d packages, %d tests without, %d with; %d pass both, %d fail both, %d pass only with, %d regressions, %d packages broken\n",
		prefix(*label), len(b.pkgs), len(a.tests), len(b.tests), passBoth, len(bothFail), len(fixed), len(regs), len(broken))
	for _, k := range bothFail {
		fmt.Println("  fails without and with:", strings.Replace(k, "\t", " ", 1))
	}
	for _, k := range fixed {
		fmt.Println("  fails without, passes with:", strings.Replace(k, "\t", " ", 1))
	}
	for _, k := range regs {
		fmt.Println("  REGRESSION:", strings.Replace(k, "\t", " ", 1))
	}
	for _, p := range broken {
		fmt.Println("  BROKEN (failed without running a test):", p)
		if o := b.output[p]; o != nil {
			io.WriteString(os.Stdout, indent(o.String()))
		}
	}
	if *regOut != "" {
		var lines []string
		for k := range top {
			lines = append(lines, strings.Replace(k, "\t", " ", 1))
		}
		sort.Strings(lines)
		s := strings.Join(lines, "\n")
		if s != "" {
			s += "\n"
		}
		if err := os.WriteFile(*regOut, []byte(s), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testdiff:", err)
			os.Exit(3)
		}
	}
	switch {
	case len(broken) > 0:
		os.Exit(2)
	case len(regs) > 0:
		os.Exit(1)
	}
}

// topLevel returns "pkg\tTest" of "pkg\tTest/sub".
func topLevel(k string) string {
	pkg, test, _ := strings.Cut(k, "\t")
	test, _, _ = strings.Cut(test, "/")
	return pkg + "\t" + test
}

func prefix(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("    " + l)
		}
	}
	return b.String()
}
