package timescale

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFactor(t *testing.T) {
	for _, c := range []struct {
		env  string
		want float64
	}{{"", 1}, {"2.5", 2.5}, {"junk", 1}, {"-3", 1}, {"0", 1}, {"0.0001", 0.01}, {"1e9", MaxFactor}} {
		t.Setenv(EnvVar, c.env)
		if got := Factor(); got != c.want {
			t.Errorf("%s=%q: Factor() = %v, want %v", EnvVar, c.env, got, c.want)
		}
	}
	t.Setenv(EnvVar, "3")
	if got := D(10 * time.Millisecond); got != 30*time.Millisecond {
		t.Errorf("D(10ms) with factor 3 = %v, want 30ms", got)
	}
}

// TestCheck: a set value that is not a positive finite number is an error
// naming the variable, the value and the form wanted; unset, empty and
// valid values are not.
func TestCheck(t *testing.T) {
	for _, v := range []string{"", "1", "2.5", "0.001", "10", "1000"} {
		t.Setenv(EnvVar, v)
		if err := Check(); err != nil {
			t.Errorf("%s=%q: %v, want no error", EnvVar, v, err)
		}
	}
	for _, v := range []string{"junk", "2x", "-3", "0", "NaN", "Inf", "1,5", "1e9", "1000.5"} {
		t.Setenv(EnvVar, v)
		err := Check()
		if err == nil {
			t.Errorf("%s=%q: no error", EnvVar, v)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, EnvVar) || !strings.Contains(msg, strconv.Quote(v)) || !strings.Contains(msg, "positive number") || strings.Contains(msg, "\n") {
			t.Errorf("%s=%q: error %q, want one line naming the variable, the value and the form", EnvVar, v, msg)
		}
	}
}
