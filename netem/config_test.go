package netem

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want BitRate
	}{
		{"1gbit", Gbit}, {"100mbit", 100 * Mbit}, {"10Mbit/s", 10 * Mbit}, {"64kbit", 64 * Kbit},
		{"1e9", Gbit}, {"2.5gbit", 2500 * Mbit}, {"1500bit", 1500}, {" 10 mbit ", 10 * Mbit}, {"10g", 10 * Gbit}, {"1000000", Mbit},
	} {
		got, err := ParseRate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "fast", "-1mbit", "1xbit", "NaN"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q): want error", bad)
		}
	}
	// tc's bytes-per-second units and unit-less numbers below 1 Mbit/s
	// ("--rate 10gbps" was 80 Gbit/s, "--rate 10" 10 bit/s) are errors
	// with the spelling to use.
	for _, c := range []struct{ in, hint string }{
		{"10gbps", `ambiguous (bytes/s to tc, so 10gbps would be 80gbit; bits/s to most readers): write 10gbit for bits/s, or 80gbit for bytes/s`},
		{"1mbps", "write 1mbit for bits/s, or 8mbit"},
		{"10", "10 bit/s, implausibly slow for a link (a forgotten unit?): write e.g. 10gbit or 10mbit, or 10bit if"},
		{"1500", "write e.g. 1500gbit"},
	} {
		_, err := ParseRate(c.in)
		if err == nil || !strings.Contains(err.Error(), c.hint) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseRate(%q): error %v, want one line with %q", c.in, err, c.hint)
		}
	}
	// A scenario's rate: is parsed the same way, with its line.
	var lc LinkConfig
	if err := yaml.Unmarshal([]byte("rate: 10gbps\n"), &lc); err == nil || !strings.Contains(err.Error(), "line 1: netem: rate \"10gbps\"") {
		t.Errorf("yaml rate: 10gbps: %v, want the ambiguity error with its line", err)
	}
	// A JSON number of bit/s is what MarshalJSON writes: any size.
	var small BitRate
	if err := json.Unmarshal([]byte("1500"), &small); err != nil || small != 1500 {
		t.Errorf("JSON 1500: %v, %v; want 1500 bit/s", small, err)
	}
	for _, r := range []BitRate{Gbit, 100 * Mbit, 1500, 2500 * Mbit} {
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Errorf("round trip %v -> %q -> %v, %v", uint64(r), r.String(), back, err)
		}
	}
}

func TestTxTime(t *testing.T) {
	if got := (100 * Mbit).TxTime(1500); got != 120*time.Microsecond {
		t.Errorf("100mbit TxTime(1500) = %v, want 120µs", got)
	}
	if got := Gbit.TxTime(1514); got != 12112*time.Nanosecond {
		t.Errorf("1gbit TxTime(1514) = %v, want 12.112µs", got)
	}
	if got := BitRate(0).TxTime(1500); got != 0 {
		t.Errorf("unlimited TxTime = %v, want 0", got)
	}
}

func TestLinkConfigYAMLJSON(t *testing.T) {
	src := `
rate: 100mbit
buffer_bytes: 65536
priorities: 4
delay: 1ms
jitter: 100us
jitter_dist: normal
loss: {model: gilbert-elliott, p: 0.01, r: 0.3, loss_bad: 1}
duplicate: 0.001
reorder: {probability: 0.01, gap: 3}
mtu: 1500
`
	var c LinkConfig
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := LinkConfig{Rate: 100 * Mbit, BufferBytes: 65536, Priorities: 4, Delay: time.Millisecond,
		Jitter: 100 * time.Microsecond, JitterDist: "normal",
		Loss:      LossConfig{Model: "gilbert-elliott", P: 0.01, R: 0.3, LossBad: 1},
		Duplicate: 0.001, Reorder: ReorderConfig{Probability: 0.01, Gap: 3}, MTU: 1500}
	if c != want {
		t.Fatalf("yaml decode = %+v\nwant %+v", c, want)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rate_bps":100000000`) || !strings.Contains(string(b), `"delay_ns":1000000`) {
		t.Errorf("json = %s", b)
	}
	var back LinkConfig
	if err := json.Unmarshal(b, &back); err != nil || back != c {
		t.Errorf("json round trip = %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"rate_bps":"1gbit"}`), &back); err != nil || back.Rate != Gbit {
		t.Errorf("json rate string = %v, %v", back.Rate, err)
	}
	y, err := yaml.Marshal(c)
	if err != nil || !strings.Contains(string(y), "rate: 100mbit") {
		t.Errorf("yaml encode = %s, %v", y, err)
	}
	if err := yaml.Unmarshal([]byte("rate: fast\n"), &back); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad rate error = %v, want one naming line 1", err)
	}
}

func TestLinkConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    LinkConfig
		want string
	}{
		{LinkConfig{Priorities: 9}, "priorities = 9"},
		{LinkConfig{BufferBytes: -1}, "buffer_bytes"},
		{LinkConfig{Delay: -time.Millisecond}, "delay = -1ms"},
		{LinkConfig{JitterDist: "pareto"}, "jitter_dist"},
		{LinkConfig{Duplicate: 1.5}, "duplicate = 1.5"},
		{LinkConfig{MTU: 20}, "mtu = 20"},
		{LinkConfig{Reorder: ReorderConfig{Probability: 0.1}}, "reorder.gap is 0"},
		{LinkConfig{Loss: LossConfig{Model: "bursty"}}, `loss.model = "bursty"`},
		{LinkConfig{Loss: LossConfig{Probability: 0.1}}, "loss.model is empty"},
		{LinkConfig{Loss: LossConfig{Model: "random", P: 0.1}}, "takes only probability"},
		{LinkConfig{Loss: LossConfig{Model: "gilbert-elliott", P: 0.1}}, "loss.r = 0"},
		{LinkConfig{Loss: LossConfig{Model: "gilbert-elliott", P: 0.1, R: 2}}, "loss.r = 2"},
		{LinkConfig{CorruptMode: "mangle"}, "corrupt_mode"},
	} {
		err := tc.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Validate(%+v) = %v, want one line containing %q", tc.c, err, tc.want)
		}
	}
	if err := (&LinkConfig{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}

func TestQueueMapping(t *testing.T) {
	c8 := LinkConfig{}
	c2 := LinkConfig{Priorities: 2}
	c2s := LinkConfig{Priorities: 2, PriorityMap: "scale"}
	for p := uint8(0); p < 8; p++ {
		if got := c8.Queue(p); got != int(p) {
			t.Errorf("8 levels: Queue(%d) = %d", p, got)
		}
		if got, want := c2.Queue(p), min(int(p), 1); got != want {
			t.Errorf("2 levels clamp: Queue(%d) = %d, want %d", p, got, want)
		}
		if got, want := c2s.Queue(p), int(p)/4; got != want {
			t.Errorf("2 levels scale: Queue(%d) = %d, want %d", p, got, want)
		}
	}
}
