// Package repeatguard holds the repeated-call guard's bookkeeping, which
// names no ADK type: the canonical hash of a call (tool, loop scope and
// arguments, exact for integers and normalised for Unicode text), the
// per-turn counts (Turns) and the marks of listed repeats per run and
// branch (Marks). The callbacks package of each ADK line drives them from
// ADK's callbacks; docs/design.md ("Repeated-call guard") explains the
// guard.
package repeatguard
