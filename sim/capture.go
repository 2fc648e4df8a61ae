package sim

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/homatest/homatest/pcap"
)

// CaptureConfig says where a Sim writes its captures: pcapng (package
// pcap) with one interface per host in port order, named as a harness
// run names its switch ports ("p1(h1)", ...), timestamps in nanoseconds
// of virtual time since the Unix epoch. Frames are recorded at the hosts'
// protocol code (unless Wire): as sent when the protocol emitted the packet (before the
// host's processing cost and its uplink), as delivered when the protocol
// took it in (after the switch and the processing cost). A host's view
// (what it sent merged with what it got) is then exactly what its
// protocol saw and did, and when: no timing slack is needed to judge it.
// A host's stamps strictly increase, in the order things happened to it:
// packets it sends or takes in at one virtual instant are stamped 1 ns
// apart (a reader that orders a host's view by time then gets the order
// of the simulation, which equal stamps could not tell). A check of the
// views therefore needs no tolerance beyond ViewTolerance.
type CaptureConfig struct {
	// Sent gets every frame as its host sent it (pcapng inbound at its
	// switch port, as harness.DirIn); nil: not written.
	Sent io.Writer
	// Delivered gets every frame as delivered to its host (outbound, as
	// harness.DirOut); nil: not written.
	Delivered io.Writer
	// Both gets both, merged in time order, with every frame the switch
	// dropped or altered as a comment record (a harness run's
	// capture.pcapng); nil: not written.
	Both io.Writer
	// Wire records frames where a switch port capture sees them instead
	// (a harness run's capture): as sent when the frame enters the switch
	// (after the host's processing cost and its uplink), as delivered when
	// the switch hands it to the host (before the host's processing). A
	// host's view is then what its link carried, and a host slower than
	// its traffic shows packets delivered long before it acts on them, as
	// a starved host in namespaces does; judging such a view needs the
	// tolerances of a real-time capture.
	Wire bool
	// SnapLen is how many bytes of each IPv4 frame are kept (0: all); an
	// IPv6 frame keeps IPv6SnapExtra more, for its longer IP header, so
	// that both keep the same Homa bytes. The frame's length is recorded
	// whole, and readers take Homa lengths from the IP header. 128 bytes
	// keep every Homa header (wire.MaxHeaderLen after 34 bytes of
	// Ethernet and IPv4 headers, 54 with IPv6): an IPv6 ACK cut at 128
	// lost its acks slots, which homatest decode showed as an error.
	SnapLen int
}

// IPv6SnapExtra is the bytes an IPv6 frame keeps past CaptureConfig.SnapLen:
// an IPv6 header's 40 bytes against an IPv4 header's 20 (no options).
const IPv6SnapExtra = 40 - 20

// ViewTolerance is the timing tolerance a check of a Sim's captures
// needs: a packet a host sends at once in answer to one it took in is
// stamped a few nanoseconds after it (1 ns per packet of that instant), so
// "at once" is "within ViewTolerance". Nothing else varies: 1 µs covers a
// thousand packets at one instant.
const ViewTolerance = time.Microsecond

// Capture starts writing captures as cfg says, for the hosts added so
// far; call it after the last AddHost and AddRaw and before the clock
// runs, and Flush at the end. Errors: the clock has run, a writer fails.
func (s *Sim) Capture(cfg CaptureConfig) error {
	if s.sealed {
		return errSealed
	}
	ifaces := make([]pcap.Interface, len(s.hosts))
	for i, h := range s.hosts {
		ifaces[i] = pcap.Interface{Name: fmt.Sprintf("p%d(%s)", i+1, h.name),
			Description: fmt.Sprintf("simulated switch port to host %s (%v)", h.name, h.addr)}
	}
	if len(ifaces) == 0 {
		return errors.New("sim: Capture before any host: add the hosts first")
	}
	c := &capture{snap: cfg.SnapLen, wire: cfg.Wire, last: make([]time.Duration, len(s.hosts))}
	for i := range c.last {
		c.last[i] = -1
	}
	for _, w := range []struct {
		to **pcap.Writer
		w  io.Writer
	}{{&c.sentW, cfg.Sent}, {&c.delivW, cfg.Delivered}, {&c.bothW, cfg.Both}} {
		if w.w == nil {
			continue
		}
		pw, err := pcap.NewWriter(w.w, ifaces...)
		if err != nil {
			return err
		}
		*w.to = pw
	}
	c.s, s.cap = s, c
	return nil
}

// Flush writes out what the capture writers buffer and returns the first
// error the simulation met (Err). Each capture first declares, in an
// interface statistics block per port stamped at its last frame, that it
// dropped no packet itself (isb_ifdrop 0: the simulator records every
// frame), so that a check of the file blames no missing bytes on the
// capture (spec.Checker.SetCaptureDropsDeclared).
func (s *Sim) Flush() error {
	if s.cap != nil {
		last := time.Duration(0)
		for _, t := range s.cap.last {
			last = max(last, t)
		}
		for _, w := range []*pcap.Writer{s.cap.sentW, s.cap.delivW, s.cap.bothW} {
			if w != nil {
				for i := range s.cap.last {
					if err := w.WriteInterfaceStats(i, time.Unix(0, int64(last)), 0); err != nil {
						s.fail(err)
					}
				}
				if err := w.Flush(); err != nil {
					s.fail(err)
				}
			}
		}
	}
	return s.err
}

// capture writes a Sim's captures.
type capture struct {
	s                    *Sim
	snap                 int
	wire                 bool // at the switch ports (CaptureConfig.Wire)
	sentW, delivW, bothW *pcap.Writer
	last                 []time.Duration // each host's last stamp
}

// stamp returns the stamp of host port's next record at t.
func (c *capture) stamp(port int, t time.Duration) time.Duration {
	if port < len(c.last) {
		t = max(t, c.last[port]+1)
		c.last[port] = t
	}
	return t
}

func (c *capture) write(w *pcap.Writer, port int, t time.Duration, f []byte, dir pcap.Direction, comment string) {
	if w == nil || c.s.err != nil {
		return
	}
	data := f
	snap := c.snap
	if snap > 0 && len(f) >= 14 && f[12] == 0x86 && f[13] == 0xdd { // EtherType IPv6
		snap += IPv6SnapExtra
	}
	if snap > 0 && len(data) > snap {
		data = data[:snap]
	}
	if err := w.WritePacketDir(port, time.Unix(0, int64(t)), data, len(f), dir, comment); err != nil {
		c.s.fail(fmt.Errorf("sim: capture: %w", err))
	}
}

func (c *capture) sent(port int, t time.Duration, f []byte) {
	t = c.stamp(port, t)
	c.write(c.sentW, port, t, f, pcap.DirInbound, "")
	c.write(c.bothW, port, t, f, pcap.DirInbound, "")
}

func (c *capture) delivered(port int, t time.Duration, f []byte) {
	t = c.stamp(port, t)
	c.write(c.delivW, port, t, f, pcap.DirOutbound, "")
	c.write(c.bothW, port, t, f, pcap.DirOutbound, "")
}

// note records a frame the switch dropped or altered (Both only).
func (c *capture) note(port int, t time.Duration, f []byte, comment string) {
	if port < len(c.s.hosts) {
		c.write(c.bothW, port, t, f, pcap.DirOutbound, "switch: "+comment)
	}
}
