package workload

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"strconv"
	"strings"
)

//go:embed dists/*.txt
var tableFiles embed.FS

// rawPoint is one {length, weight} entry of a HomaModule workload table
// (dist.h struct weight).
type rawPoint struct {
	length int     // message length in bytes
	weight float64 // relative weight (the tables' weights sum to 1.0)
}

// Names lists the built-in workloads, as Parse accepts them.
var Names = []string{"w1", "w2", "w3", "w4", "w5"}

// table returns the raw points of workload name ("w1".."w5"), ascending by
// length.
func table(name string) ([]rawPoint, error) {
	b, err := tableFiles.ReadFile("dists/" + name + ".txt")
	if err != nil {
		return nil, fmt.Errorf("workload: no table %q", name)
	}
	return parseTable(name, b)
}

// parseTable reads lines "length weight"; '#' starts a comment line.
func parseTable(name string, b []byte) ([]rawPoint, error) {
	var pts []rawPoint
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("workload: %s line %d: want \"length weight\", got %q", name, n, line)
		}
		l, err1 := strconv.Atoi(f[0])
		w, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || l < 1 || w < 0 || len(pts) > 0 && l <= pts[len(pts)-1].length {
			return nil, fmt.Errorf("workload: %s line %d: bad point %q (lengths must be positive and ascending, weights non-negative)", name, n, line)
		}
		pts = append(pts, rawPoint{l, w})
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("workload: %s: empty table", name)
	}
	return pts, nil
}
