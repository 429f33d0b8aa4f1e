package degrade_test

import (
	"fmt"

	"github.com/adkbreaker/adkbreaker/degrade"
)

// The plugin's WithToolNote adds the sentence to protected tools'
// descriptions in each model request; applying it twice changes nothing.
func ExampleWithToolNote() {
	d := degrade.WithToolNote("Fetch one invoice by ID.")
	fmt.Println(d == degrade.WithToolNote(d))
	fmt.Println(d)
	// Output:
	// true
	// Fetch one invoice by ID.
	//
	// If this tool returns status "unavailable", its service is down: do not call it again in this turn; tell the user what is missing and continue without it.
}
