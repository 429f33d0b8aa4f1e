package registry

import (
	"runtime"
	"testing"
)

// TestAdmissionWeak: an Admission answers for its owner while the owner
// holds it, and is forgotten once nothing else references it.
func TestAdmissionWeak(t *testing.T) {
	r := MustNew()
	keep := NewAdmission(func(call any, k Key) bool { return call == "mine" && k == "dep" })
	r.AddAdmission(keep)
	func() {
		r.AddAdmission(NewAdmission(func(any, Key) bool { return true })) // dropped at once
	}()
	runtime.GC()
	r.AddAdmission(nil)
	r.AddAdmission(keep) // prunes what was collected
	if n := len(*r.adm.list.Load()); n != 2 {
		t.Errorf("%d admissions held, want 2 (keep, twice; the dropped one forgotten)", n)
	}
	if !r.Admitted("mine", "dep") || r.Admitted("other", "dep") || r.Admitted("mine", "x") {
		t.Error("Admitted does not follow the live admission")
	}
	runtime.KeepAlive(keep)
}
