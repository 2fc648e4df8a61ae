package agent

import (
	"os"
	"strconv"
	"time"
)

// timeScale returns HOMATEST_TIME_SCALE (a positive float, default 1), the
// one knob that multiplies every timeout and tolerance in homatest.
func timeScale() float64 {
	f, err := strconv.ParseFloat(os.Getenv("HOMATEST_TIME_SCALE"), 64)
	if err != nil || f <= 0 {
		return 1
	}
	return f
}

// scaled returns d multiplied by timeScale.
func scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * timeScale()) }
