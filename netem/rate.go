package netem

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// BitRate is a link rate in bit/s. Its text form is what ParseRate
// accepts and String prints ("100mbit"); YAML and JSON accept either a
// number of bit/s or such a string.
type BitRate uint64

// Common rates.
const (
	Kbit BitRate = 1000
	Mbit BitRate = 1000 * Kbit
	Gbit BitRate = 1000 * Mbit
)

var rateUnits = []struct {
	suffix string
	mult   float64
}{
	{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
	{"tbps", 8e12}, {"gbps", 8e9}, {"mbps", 8e6}, {"kbps", 8e3}, {"bps", 8},
	{"t", 1e12}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3},
}

// minBareRate is the lowest rate a number without a unit may give: below
// it ("--rate 10") a unit was surely forgotten, and a link of a few bit/s
// would make a run simulate hours of virtual time.
const minBareRate = 1e6

// ParseRate parses a rate in the style of tc(8): a number with a unit,
// case-insensitive, with an optional "/s": "1gbit", "100Mbit/s",
// "10mbit", "64kbit", "2.5gbit", "10g" (bits per second). A number
// without a unit is bit/s and must be at least 1e6 ("1e9"); a lower one
// ("10") is an error asking for a unit. tc's "bps" units (BYTES per
// second: "10gbps" is 80 Gbit/s to tc, 10 Gbit/s to most readers) are
// refused as ambiguous, with the "bit" spelling of both readings.
// Errors name the input and the accepted forms. BitRate.UnmarshalJSON
// takes any JSON number of bit/s (what MarshalJSON writes).
func ParseRate(s string) (BitRate, error) {
	return parseRate(s, true)
}

// parseRate is ParseRate; without strict, a bare number of any size is
// bit/s.
func parseRate(s string, strict bool) (BitRate, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	in = strings.TrimSuffix(in, "/s")
	mult, unit := 1.0, ""
	for _, u := range rateUnits {
		if strings.HasSuffix(in, u.suffix) {
			in, mult, unit = strings.TrimSuffix(in, u.suffix), u.mult, u.suffix
			break
		}
	}
	num := strings.TrimSpace(in)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || v != v || v*mult > math.MaxUint64/2 {
		return 0, fmt.Errorf("netem: rate %q: want a number of bit/s with a unit, e.g. 1gbit, 100mbit, 10Mbit/s", s)
	}
	if strings.HasSuffix(unit, "bps") {
		bits := strings.TrimSuffix(unit, "ps") + "it"
		return 0, fmt.Errorf("netem: rate %q: %q is ambiguous (bytes/s to tc, so %s would be %v; bits/s to most readers): write %s%s for bits/s, or %v for bytes/s",
			s, unit, s, BitRate(math.Round(v*mult)), num, bits, BitRate(math.Round(v*mult)))
	}
	if strict && unit == "" && v > 0 && v < minBareRate {
		return 0, fmt.Errorf("netem: rate %q is %s bit/s, implausibly slow for a link (a forgotten unit?): write e.g. %sgbit or %smbit, or %sbit if %s bit/s is meant", s, num, num, num, num, num)
	}
	return BitRate(math.Round(v * mult)), nil
}

// String prints the rate with the largest exact tc unit ("100mbit",
// "1gbit", "1500bit"); 0 prints "unlimited".
func (r BitRate) String() string {
	if r == 0 {
		return "unlimited"
	}
	for _, u := range []struct {
		s string
		m BitRate
	}{{"tbit", 1000 * Gbit}, {"gbit", Gbit}, {"mbit", Mbit}, {"kbit", Kbit}} {
		if r%u.m == 0 {
			return strconv.FormatUint(uint64(r/u.m), 10) + u.s
		}
	}
	return strconv.FormatUint(uint64(r), 10) + "bit"
}

// TxTime returns how long a frame of n bytes occupies a link of rate r
// (n*8/r seconds, rounded up to the nanosecond); 0 when r is 0 (unlimited).
func (r BitRate) TxTime(n int) time.Duration {
	if r == 0 || n <= 0 {
		return 0
	}
	bits := uint64(n) * 8 * uint64(time.Second)
	return time.Duration((bits + uint64(r) - 1) / uint64(r))
}

// MarshalText prints String, except that 0 is "0".
func (r BitRate) MarshalText() ([]byte, error) {
	if r == 0 {
		return []byte("0"), nil
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses with ParseRate.
func (r *BitRate) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalJSON writes the rate as a number of bit/s.
func (r BitRate) MarshalJSON() ([]byte, error) {
	return strconv.AppendUint(nil, uint64(r), 10), nil
}

// UnmarshalJSON accepts a number of bit/s or a ParseRate string.
func (r *BitRate) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		// A JSON number is bit/s as MarshalJSON writes it, of any size.
		v, err := parseRate(string(b), false)
		if err != nil {
			return err
		}
		*r = v
		return nil
	}
	return r.UnmarshalText([]byte(s))
}

// UnmarshalYAML accepts a number of bit/s or a ParseRate string, and
// reports the line of a bad value.
func (r *BitRate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: rate: want a scalar such as 100mbit", n.Line)
	}
	if err := r.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}
