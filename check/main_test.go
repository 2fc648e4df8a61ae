package check

import (
	"os"
	"testing"
)

// TestMain removes the benchmarks' generated captures (bench_test.go)
// when the test binary ends.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
