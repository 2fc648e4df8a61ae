// Package timescale is homatest's one knob for slow machines: the environment
// variable HOMATEST_TIME_SCALE (a positive float, default 1) multiplies every
// timeout and timing tolerance in tests, the harness and the conformance
// suite, so a run on a loaded or slow machine widens its windows in one place.
package timescale

import (
	"os"
	"strconv"
	"time"
)

// EnvVar is the name of the environment variable read by Factor.
const EnvVar = "HOMATEST_TIME_SCALE"

// Factor returns HOMATEST_TIME_SCALE as a float ≥ 1/100; unset, empty,
// unparsable or non-positive values give 1.
func Factor() float64 {
	v := os.Getenv(EnvVar)
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) {
		return 1
	}
	if f < 0.01 {
		return 0.01
	}
	return f
}

// D returns d multiplied by Factor.
func D(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}
