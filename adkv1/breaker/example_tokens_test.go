package breaker_test

import (
	"fmt"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// A turn may spend 200 000 tokens (sub-agents included), 25 model calls
// and two minutes; the first model call past any of them is answered by
// the plugin with a final answer. The status page shows what turns that
// met an outage spent in the last hour.
func ExampleWithTokenBudget() {
	costs := statuspage.NewTurnCosts(nil)
	p, err := breaker.New(
		breaker.WithTokenBudget(200_000),
		breaker.WithTurnBudget(25, 2*time.Minute),
		breaker.WithCostObserver(costs),
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Name())
	// Output: adkbreaker
}
