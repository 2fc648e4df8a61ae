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

// MaxFactor is the largest HOMATEST_TIME_SCALE: a 30 s build timeout
// becomes 8 h 20 min. Far larger factors overflow time.Duration (1e9 made
// every timeout negative, so each wait ended at once with "context
// deadline exceeded").
const MaxFactor = 1000

// Factor returns HOMATEST_TIME_SCALE as a float in [1/100, MaxFactor];
// unset, empty, unparsable or non-positive values give 1.
func Factor() float64 {
	v := os.Getenv(EnvVar)
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) {
		return 1
	}
	return min(max(f, 0.01), MaxFactor)
}

// Check returns an error naming HOMATEST_TIME_SCALE, its value and the
// form it takes when the variable is set to something Factor would
// ignore (not a number, or not positive) or that is above MaxFactor; nil when it is unset, empty or
// valid. Commands call it first, so that a mistyped factor is said rather
// than silently replaced by 1.
func Check() error {
	v := os.Getenv(EnvVar)
	if v == "" {
		return nil
	}
	if f, err := strconv.ParseFloat(v, 64); err != nil || !(f > 0) || math.IsInf(f, 1) || f > MaxFactor {
		return fmt.Errorf("%s=%q: want a positive number up to %d such as 2 or 0.5 (it multiplies every timeout and tolerance; unset it for 1)", EnvVar, v, MaxFactor)
	}
	return nil
}

// D returns d multiplied by Factor.
func D(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}
