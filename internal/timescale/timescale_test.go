package timescale

import (
	"testing"
	"time"
)

func TestFactor(t *testing.T) {
	for _, c := range []struct {
		env  string
		want float64
	}{{"", 1}, {"2.5", 2.5}, {"junk", 1}, {"-3", 1}, {"0", 1}, {"0.0001", 0.01}} {
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
