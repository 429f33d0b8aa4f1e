package degrade_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

func ExampleBuilder_Build() {
	// One Builder per tool, made when the tool is registered.
	b := degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{})

	// The first short-circuit of search-api in this invocation.
	payload := b.Build(degrade.ReasonCircuitOpen, 26500*time.Millisecond, 1, nil)
	data, _ := json.MarshalIndent(payload, "", "  ")
	fmt.Println(string(data))

	// The second one reaches the limit: the guidance turns terminal.
	payload = b.Build(degrade.ReasonCircuitOpen, 25*time.Second, 2, nil)
	fmt.Println(payload[degrade.KeyGuidance])
	// Output:
	// {
	//   "dependency": "search-api",
	//   "guidance": "web_search is unavailable: search-api keeps failing, so calls to it are paused. Retrying now will not help; see retry. Use other tools or answer without it; tell the user what is missing.",
	//   "reason": "circuit_open",
	//   "retry": {
	//     "advised": false,
	//     "after_seconds": 27
	//   },
	//   "schema": "adkbreaker.unavailable/v1",
	//   "short_circuits": {
	//     "limit": 2,
	//     "this_turn": 1
	//   },
	//   "status": "unavailable",
	//   "tool": "web_search"
	// }
	// Do not call web_search again in this turn; it is still unavailable (paused after repeated failures). Answer the user now without it, and say that search-api is temporarily unavailable.
}

func ExampleNewBuilder_alternatives() {
	b := degrade.NewBuilder("weather-api", "get_weather", 0, degrade.Extras{
		Alternatives: []string{"get_forecast", "get_weather", "ask_user"},
	})
	payload := b.Build(degrade.ReasonTimeout, 90*time.Second, 1, nil)
	fmt.Println(payload[degrade.KeyAlternatives])
	fmt.Println(payload[degrade.KeyGuidance])
	// Output:
	// [get_forecast ask_user]
	// get_weather is failing: weather-api is not responding in time. Do not retry now, even with other arguments; see retry. Use other tools or answer without it; tell the user what is missing.
}

func ExampleParse() {
	b := degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{})
	data, _ := json.Marshal(b.Build(degrade.ReasonRateLimited, time.Minute, 2, nil))

	var decoded map[string]any
	_ = json.Unmarshal(data, &decoded)
	info, ok := degrade.Parse(decoded)
	fmt.Printf("%t %+v\n", ok, info)

	_, ok = degrade.Parse(map[string]any{"status": "unavailable", "error": "boom"})
	fmt.Println(ok)
	// Output:
	// true {Dependency:search-api Tool:web_search Reason:rate_limited RetryAfterSeconds:60 ThisTurn:2 Limit:2 Terminal:true}
	// false
}

func ExampleSafeName() {
	fmt.Println(degrade.SafeName("  invoice\u202efdp.exe\U000E0041 "))
	fmt.Println(degrade.SafeName("\u200b"))
	// Output:
	// invoicefdp.exe
	// unknown
}

func ExampleAnnotate() {
	d := degrade.Annotate("Searches the web.", 27*time.Second)
	fmt.Println(d)
	fmt.Println(degrade.Annotate(d, 3*time.Second)) // replaced, not stacked
	fmt.Println(degrade.StripAnnotation(d))
	// Output:
	// [UNAVAILABLE: temporarily unavailable, retry in about 27s. Do not call this tool now.] Searches the web.
	// [UNAVAILABLE: temporarily unavailable, retry in about 3s. Do not call this tool now.] Searches the web.
	// Searches the web.
}

func ExampleLedger() {
	var l degrade.Ledger // or degrade.NewLedger(degrade.LedgerOptions{...})
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

	// Short-circuits in invocation "inv-1", as the breaker reports them.
	l.Hit("inv-1", "search-api", now)
	l.Hit("inv-1", "weather-api", now)
	thisDep, total := l.Hit("inv-1", "search-api", now)
	fmt.Println(thisDep, total)
	fmt.Println(l.Counts("inv-1"))

	// When the invocation ends.
	l.Release("inv-1")
	fmt.Println(l.Total("inv-1"), l.Len())
	// Output:
	// 2 3
	// [{search-api 2} {weather-api 1}]
	// 0 0
}

func ExampleFinalMessage() {
	fmt.Println(degrade.FinalMessage([]degrade.Unavailable{
		{Dependency: "weather-api", RetryAfter: 3 * time.Minute},
		{Dependency: "search-api", RetryAfter: 90 * time.Second},
	}))
	// Output:
	// Sorry, I couldn't fully complete your request because search-api and weather-api are temporarily unavailable. Please try again in about 3 minutes.
}

func ExampleModelUnavailableMessage() {
	fmt.Println(degrade.ModelUnavailableMessage(30 * time.Second))
	// Output:
	// The assistant is temporarily unavailable. Please try again in about 30 seconds.
}

func ExampleCapabilityNotice() {
	fmt.Println(degrade.CapabilityNotice([]string{"mcp:jira", "mcp:github"}))
	// Output:
	// Temporarily unavailable: mcp:github and mcp:jira. Their tools are not offered in this turn, so do not try to call them. Continue with the tools you have, and tell the user if part of the request cannot be done.
}

func ExampleCheckName() {
	for _, name := range []string{"billing-api", "mcp:weather", "https://billing.internal/v1", "10.0.0.7:8080", "db.internal.example:5432"} {
		fmt.Printf("%s: %v\n", name, degrade.CheckName(name) == nil)
	}
	fmt.Println(degrade.CheckName("https://svc:hunter2@billing.example"))
	// Output:
	// billing-api: true
	// mcp:weather: true
	// https://billing.internal/v1: false
	// 10.0.0.7:8080: false
	// db.internal.example:5432: false
	// looks like it holds a credential (a key, token, password or user info); it is shown to the model: name the dependency (like billing-api) and keep secrets out of configuration names
}

// A capability whose tools are still offered (from the last tool list that
// could be read) while its server is down.
func ExampleDegradedCapabilityNotice() {
	fmt.Println(degrade.DegradedCapabilityNotice([]string{"weather forecasts"}))
	// Output: Temporarily unavailable: weather forecasts. Their tools are still listed, but calls to them may return status unavailable; if one does, do not call it again in this turn. Continue with the tools you have, and tell the user if part of the request cannot be done.
}

func ExampleRepeatedCallMessageDuring() {
	fmt.Println(degrade.RepeatedCallMessageDuring("get_invoice", []degrade.Unavailable{
		{Dependency: "billing-api", RetryAfter: 30 * time.Second},
	}))
	// Output:
	// Sorry, I couldn't complete your request: I kept repeating the same step (get_invoice with the same details) while billing-api was temporarily unavailable. Please try again in about 30 seconds.
}

func ExampleRepeatNoteOutage() {
	note := degrade.RepeatNoteOutage("get_invoice", 2, false)
	fmt.Println(note["guidance"])
	// Output:
	// You already called get_invoice with these arguments twice in this turn; its answer is in the conversation above and will not change now, and its service is not reliably available. Do not call get_invoice again in this turn: use that answer, or answer the user with what you have.
}
