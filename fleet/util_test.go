package fleet_test

import (
	"slices"
	"time"
)

func sortDurations(ds []time.Duration) { slices.Sort(ds) }
