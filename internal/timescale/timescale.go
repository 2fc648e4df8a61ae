// Package timescale is homatest's one knob for slow machines: the environment
// variable HOMATEST_TIME_SCALE (a positive float, default 1) multiplies every
// timeout and timing tolerance in tests, the harness and the conformance
// suite, so a run on a loaded or slow machine widens its windows in one place.
package timescale

import (
	"fmt"
	"math"
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

// Check returns an error naming HOMATEST_TIME_SCALE, its value and the
// form it takes when the variable is set to something Factor would
// ignore (not a number, or not positive) or that is infinite; nil when it is unset, empty or
// valid. Commands call it first, so that a mistyped factor is said rather
// than silently replaced by 1.
func Check() error {
	v := os.Getenv(EnvVar)
	if v == "" {
		return nil
	}
	if f, err := strconv.ParseFloat(v, 64); err != nil || !(f > 0) || math.IsInf(f, 1) {
		return fmt.Errorf("%s=%q: want a positive number such as 2 or 0.5 (it multiplies every timeout and tolerance; unset it for 1)", EnvVar, v)
	}
	return nil
}

// D returns d multiplied by Factor.
func D(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}
