package degrade

// numReasons is the size of the closed Reason set.
const numReasons = 10

// allReasons lists the closed Reason set in declaration order. Its order
// defines the index used by the package's boxed tables.
var allReasons = [numReasons]Reason{
	ReasonCircuitOpen,
	ReasonHalfOpenBusy,
	ReasonIsolated,
	ReasonTimeout,
	ReasonRateLimited,
	ReasonServerError,
	ReasonConnectFailed,
	ReasonMalformedResponse,
	ReasonBudgetExhausted,
	ReasonSaturated,
}

// boxedReasons holds each reason's string already converted to an interface
// value, indexed like allReasons. Converting a constant to an interface is
// free, so Build stores these without allocating.
var boxedReasons = [numReasons]any{
	string(ReasonCircuitOpen),
	string(ReasonHalfOpenBusy),
	string(ReasonIsolated),
	string(ReasonTimeout),
	string(ReasonRateLimited),
	string(ReasonServerError),
	string(ReasonConnectFailed),
	string(ReasonMalformedResponse),
	string(ReasonBudgetExhausted),
	string(ReasonSaturated),
}

// reasonIndex returns r's index in allReasons, and false if r is not in the
// closed set.
func reasonIndex(r Reason) (int, bool) {
	switch r {
	case ReasonCircuitOpen:
		return 0, true
	case ReasonHalfOpenBusy:
		return 1, true
	case ReasonIsolated:
		return 2, true
	case ReasonTimeout:
		return 3, true
	case ReasonRateLimited:
		return 4, true
	case ReasonServerError:
		return 5, true
	case ReasonConnectFailed:
		return 6, true
	case ReasonMalformedResponse:
		return 7, true
	case ReasonBudgetExhausted:
		return 8, true
	case ReasonSaturated:
		return 9, true
	}
	return 0, false
}

// Valid reports whether r is one of the package's Reason constants. The
// empty Reason is not valid.
func (r Reason) Valid() bool {
	_, ok := reasonIndex(r)
	return ok
}

// Reasons returns every valid Reason, in declaration order. The caller owns
// the returned slice.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	copy(out, allReasons[:])
	return out
}

// reasonFamily groups reasons whose guidance shares its wording.
type reasonFamily uint8

const (
	// familyOpen: the breaker itself is withholding calls (open, isolated
	// by an operator, half-open with its probe slots taken, or the
	// dependency's bulkhead full).
	familyOpen reasonFamily = iota
	// familyFailure: the dependency has been failing in a specific way.
	familyFailure
	// familyBudget: this invocation's short-circuit budget is spent.
	familyBudget
)

// family returns the guidance family of the reason at index i.
func family(i int) reasonFamily {
	switch allReasons[i] {
	case ReasonCircuitOpen, ReasonHalfOpenBusy, ReasonIsolated, ReasonSaturated:
		return familyOpen
	case ReasonBudgetExhausted:
		return familyBudget
	default:
		return familyFailure
	}
}

// String returns the family's name as used in template names.
func (f reasonFamily) String() string {
	switch f {
	case familyOpen:
		return "open"
	case familyBudget:
		return "budget"
	default:
		return "failure"
	}
}
