package netem

import (
	"errors"
	"fmt"
	"time"
)

// LinkConfig describes one emulated egress link: what a switch port does to
// the frames it sends. Both backends read the same LinkConfig (the switch
// backend implements every field; the tc backend reports what the running
// kernel cannot do, see Detect). The zero LinkConfig is a perfect link:
// unlimited rate, DefaultBufferBytes of buffer, 8 priority levels, no delay,
// no loss.
//
// YAML and JSON use the tags below. Durations are strings in YAML ("1ms",
// "250us") and integer nanoseconds in JSON (the _ns names); rates accept
// "1gbit", "100mbit", "10Mbit/s", "1e9" or a plain number of bit/s.
type LinkConfig struct {
	// Rate is the link rate in bit/s; a frame of n bytes occupies the link
	// for n*8/Rate seconds (Ethernet preamble and inter-frame gap are not
	// counted). 0 means unlimited (no serialisation delay).
	Rate BitRate `yaml:"rate,omitempty" json:"rate_bps,omitempty"`
	// BufferBytes is the egress buffer of the port in bytes, shared by all
	// priority levels; a frame that does not fit is tail-dropped (reason
	// DropBuffer). 0 means DefaultBufferBytes. The tc backend gives each
	// priority queue a bfifo of BufferBytes (the kernel has no buffer
	// shared by several qdiscs), and leaves the kernel's default (pfifo of
	// txqueuelen packets) when it is 0.
	BufferBytes int `yaml:"buffer_bytes,omitempty" json:"buffer_bytes,omitempty"`
	// Priorities is the number of strict-priority queues, 1..8 (0 means 8).
	// A frame's Homa priority is its IP precedence (IPv4 TOS>>5, IPv6
	// traffic class>>5, as HomaModule writes priority<<5); non-IP frames
	// have priority 0. PriorityMap says how 8 priorities fold into fewer
	// queues.
	Priorities int `yaml:"priorities,omitempty" json:"priorities,omitempty"`
	// PriorityMap folds priorities 0..7 into Priorities queues:
	// "clamp" (default): queue = min(p, Priorities-1), which matches
	// HomaModule run with num_priorities = Priorities (it then uses only
	// the lowest Priorities levels, homa_init.c / sysctl num_priorities);
	// "scale": queue = p*Priorities/8, as a switch with fewer queues maps
	// the 8 IP precedences (equal-width bands).
	PriorityMap string `yaml:"priority_map,omitempty" json:"priority_map,omitempty"`
	// Delay is the one-way propagation delay added after serialisation.
	Delay time.Duration `yaml:"delay,omitempty" json:"delay_ns,omitempty"`
	// Jitter is the spread of the delay: uniform in [Delay-Jitter,
	// Delay+Jitter] or normal with standard deviation Jitter (see
	// JitterDist); the result is never below 0. Jitter can reorder frames.
	Jitter time.Duration `yaml:"jitter,omitempty" json:"jitter_ns,omitempty"`
	// JitterDist is "uniform" (default) or "normal".
	JitterDist string `yaml:"jitter_dist,omitempty" json:"jitter_dist,omitempty"`
	// Loss is the random loss model (reason DropLoss).
	Loss LossConfig `yaml:"loss,omitempty" json:"loss,omitempty"`
	// Duplicate is the probability (0..1) that a frame is sent twice.
	Duplicate float64 `yaml:"duplicate,omitempty" json:"duplicate,omitempty"`
	// Reorder holds some frames back behind later ones.
	Reorder ReorderConfig `yaml:"reorder,omitempty" json:"reorder,omitempty"`
	// Corrupt is the probability (0..1) that a frame is corrupted.
	Corrupt float64 `yaml:"corrupt,omitempty" json:"corrupt,omitempty"`
	// CorruptMode is "flip" (default: flip one random bit after the
	// Ethernet header and forward, as Linux netem does; the receiver sees a
	// bad checksum) or "drop" (drop the frame, as the next hop does when
	// the Ethernet FCS fails; reason DropCorrupt).
	CorruptMode string `yaml:"corrupt_mode,omitempty" json:"corrupt_mode,omitempty"`
	// MTU is the largest IP packet in bytes the port sends (the frame minus
	// its 14-byte Ethernet header, or 18 with an 802.1Q tag); larger frames
	// are dropped (reason DropMTU). 0 means no limit.
	MTU int `yaml:"mtu,omitempty" json:"mtu,omitempty"`
}

// LossConfig is a loss model. Model "" or "none": no loss; "random": each
// frame is lost with Probability; "gilbert-elliott": a two-state Markov
// chain (Gilbert-Elliott, as in Linux netem's "loss gemodel p r 1-h 1-k"):
// from the good state the chain moves to bad with probability P per frame,
// from bad back to good with probability R; a frame is lost with LossBad in
// the bad state and LossGood in the good state. The mean burst (time in the
// bad state) is 1/R frames; the stationary loss rate is
// (P*LossBad + R*LossGood)/(P+R).
type LossConfig struct {
	Model       string  `yaml:"model,omitempty" json:"model,omitempty"`
	Probability float64 `yaml:"probability,omitempty" json:"probability,omitempty"`
	P           float64 `yaml:"p,omitempty" json:"p,omitempty"`
	R           float64 `yaml:"r,omitempty" json:"r,omitempty"`
	LossBad     float64 `yaml:"loss_bad,omitempty" json:"loss_bad,omitempty"`
	LossGood    float64 `yaml:"loss_good,omitempty" json:"loss_good,omitempty"`
}

// ReorderConfig: with Probability (0..1) a frame is held back at the head of
// the delay line until Gap later frames of the same port have left (or
// MaxHold passed, default DefaultMaxHold), so it arrives Gap places late.
type ReorderConfig struct {
	Probability float64       `yaml:"probability,omitempty" json:"probability,omitempty"`
	Gap         int           `yaml:"gap,omitempty" json:"gap,omitempty"`
	MaxHold     time.Duration `yaml:"max_hold,omitempty" json:"max_hold_ns,omitempty"`
}

const (
	// DefaultBufferBytes is the egress buffer when LinkConfig.BufferBytes is
	// 0: 1 MiB, about 700 full-size frames.
	DefaultBufferBytes = 1 << 20
	// MaxPriorities is the most strict-priority queues a port has (Homa's 8
	// priority levels, HomaModule homa_wire.h HOMA_MAX_PRIORITIES).
	MaxPriorities = 8
	// DefaultMaxHold bounds how long a reordered or plan-held frame waits
	// for later frames before it is released anyway.
	DefaultMaxHold = 100 * time.Millisecond
)

// Validate checks the config and returns the first problem as a one-line
// error naming the field, its value and the allowed range, or nil.
func (c *LinkConfig) Validate() error {
	prob := func(name string, v float64) error {
		if v < 0 || v > 1 || v != v {
			return fmt.Errorf("netem: %s = %v: want a probability in [0, 1]", name, v)
		}
		return nil
	}
	switch {
	case c.BufferBytes < 0:
		return fmt.Errorf("netem: buffer_bytes = %d: want >= 0 (0 means %d)", c.BufferBytes, DefaultBufferBytes)
	case c.Priorities < 0 || c.Priorities > MaxPriorities:
		return fmt.Errorf("netem: priorities = %d: want 1..8 (0 means 8)", c.Priorities)
	case c.PriorityMap != "" && c.PriorityMap != "clamp" && c.PriorityMap != "scale":
		return fmt.Errorf("netem: priority_map = %q: want clamp or scale", c.PriorityMap)
	case c.Delay < 0:
		return fmt.Errorf("netem: delay = %v: want >= 0", c.Delay)
	case c.Jitter < 0:
		return fmt.Errorf("netem: jitter = %v: want >= 0", c.Jitter)
	case c.JitterDist != "" && c.JitterDist != "uniform" && c.JitterDist != "normal":
		return fmt.Errorf("netem: jitter_dist = %q: want uniform or normal", c.JitterDist)
	case c.CorruptMode != "" && c.CorruptMode != "flip" && c.CorruptMode != "drop":
		return fmt.Errorf("netem: corrupt_mode = %q: want flip or drop", c.CorruptMode)
	case c.MTU < 0 || c.MTU > 65535:
		return fmt.Errorf("netem: mtu = %d: want 0 (no limit) or 68..65535", c.MTU)
	case c.MTU > 0 && c.MTU < 68:
		return fmt.Errorf("netem: mtu = %d: want 0 (no limit) or 68..65535", c.MTU)
	case c.Reorder.Gap < 0:
		return fmt.Errorf("netem: reorder.gap = %d: want >= 1", c.Reorder.Gap)
	case c.Reorder.Probability > 0 && c.Reorder.Gap == 0:
		return errors.New("netem: reorder.probability is set but reorder.gap is 0: set gap to how many later frames overtake a reordered one")
	case c.Reorder.MaxHold < 0:
		return fmt.Errorf("netem: reorder.max_hold = %v: want >= 0", c.Reorder.MaxHold)
	}
	for _, p := range []struct {
		n string
		v float64
	}{{"duplicate", c.Duplicate}, {"corrupt", c.Corrupt}, {"reorder.probability", c.Reorder.Probability}} {
		if err := prob(p.n, p.v); err != nil {
			return err
		}
	}
	return c.Loss.validate(prob)
}

func (l *LossConfig) validate(prob func(string, float64) error) error {
	switch l.Model {
	case "", "none":
		if l.Probability != 0 || l.P != 0 || l.R != 0 || l.LossBad != 0 || l.LossGood != 0 {
			return errors.New("netem: loss parameters are set but loss.model is empty: set model to random or gilbert-elliott")
		}
		return nil
	case "random":
		if l.P != 0 || l.R != 0 || l.LossBad != 0 || l.LossGood != 0 {
			return errors.New("netem: loss.model random takes only probability (p, r, loss_bad, loss_good belong to gilbert-elliott)")
		}
		return prob("loss.probability", l.Probability)
	case "gilbert-elliott", "ge":
		if l.Probability != 0 {
			return errors.New("netem: loss.model gilbert-elliott takes p, r, loss_bad, loss_good, not probability")
		}
		for _, p := range []struct {
			n string
			v float64
		}{{"loss.p", l.P}, {"loss.r", l.R}, {"loss.loss_bad", l.LossBad}, {"loss.loss_good", l.LossGood}} {
			if err := prob(p.n, p.v); err != nil {
				return err
			}
		}
		if l.P > 0 && l.R == 0 {
			return errors.New("netem: loss.r = 0 with loss.p > 0: the chain would stay in the bad state forever; set r > 0 (mean burst = 1/r frames)")
		}
		return nil
	default:
		return fmt.Errorf("netem: loss.model = %q: want none, random or gilbert-elliott", l.Model)
	}
}

// Queues returns the number of strict-priority queues (Priorities, 0
// meaning MaxPriorities).
func (c *LinkConfig) Queues() int {
	if c.Priorities == 0 {
		return MaxPriorities
	}
	return c.Priorities
}

// Queue returns the strict-priority queue (0 = lowest) for Homa priority
// p (0..7, values above 7 are treated as 7) under the config's Priorities
// and PriorityMap.
func (c *LinkConfig) Queue(p uint8) int {
	if p > 7 {
		p = 7
	}
	n := c.Queues()
	if c.PriorityMap == "scale" {
		return int(p) * n / MaxPriorities
	}
	return min(int(p), n-1)
}

// buffer returns the buffer size in bytes (BufferBytes, default DefaultBufferBytes).
func (c *LinkConfig) buffer() int {
	if c.BufferBytes == 0 {
		return DefaultBufferBytes
	}
	return c.BufferBytes
}

// maxHold returns Reorder.MaxHold or DefaultMaxHold.
func (c *LinkConfig) maxHold() time.Duration {
	if c.Reorder.MaxHold == 0 {
		return DefaultMaxHold
	}
	return c.Reorder.MaxHold
}

// Features lists the features the config asks for, by name: "rate",
// "buffer", "priorities", "delay", "jitter", "loss", "duplicate",
// "reorder", "corrupt", "mtu". Backends use it to say what they cannot do.
func (c *LinkConfig) Features() []string {
	var f []string
	add := func(ok bool, name string) {
		if ok {
			f = append(f, name)
		}
	}
	add(c.Rate > 0, "rate")
	add(c.BufferBytes > 0, "buffer")
	add(c.Queues() > 1, "priorities")
	add(c.Delay > 0, "delay")
	add(c.Jitter > 0, "jitter")
	add(c.Loss.Model != "" && c.Loss.Model != "none", "loss")
	add(c.Duplicate > 0, "duplicate")
	add(c.Reorder.Probability > 0, "reorder")
	add(c.Corrupt > 0, "corrupt")
	add(c.MTU > 0, "mtu")
	return f
}
