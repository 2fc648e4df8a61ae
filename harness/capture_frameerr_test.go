package harness

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/pcap"
)

// fakeLive hands out frames and errors from a script, then blocks until
// the deadline is set.
type fakeLive struct {
	script []error // nil entry: a frame
	i      int
	wake   chan struct{}
}

func (f *fakeLive) ReadFrame() ([]byte, time.Time, int, error) {
	if f.i < len(f.script) {
		e := f.script[f.i]
		f.i++
		if e != nil {
			return nil, time.Time{}, 0, e
		}
		return []byte{1, 2, 3}, time.Now(), 3, nil
	}
	<-f.wake
	return nil, time.Time{}, 0, errors.New("deadline")
}
func (f *fakeLive) SetReadDeadline(time.Time) error { close(f.wake); return nil }
func (f *fakeLive) Stats() (uint64, uint64, error)  { return uint64(len(f.script)), 0, nil }
func (f *fakeLive) Close() error                    { return nil }

// TestCaptureSkipsUnreadableFrames: a frame the kernel cannot copy out
// (pcap.FrameError, as the recvmsg EFAULT a socket read gave) is
// counted and the capture goes on; it never ends the stream.
func TestCaptureSkipsUnreadableFrames(t *testing.T) {
	arts, err := NewArtifacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bad := &pcap.FrameError{Err: errors.New("couldn't read packet: bad address")}
	live := &fakeLive{script: []error{nil, bad, nil, bad, nil}, wake: make(chan struct{})}
	s := &stream{port: "p1", dir: DirIn, done: make(chan struct{}), live: live}
	s.target.Store(-1)
	if s.spool, err = newSpool(arts, ".capture-test.spool"); err != nil {
		t.Fatal(err)
	}
	defer s.removeSpool()
	go s.run()
	s.stop()
	if s.err != nil || s.n.Load() != 3 || s.readErrs.Load() != 2 || s.firstErr != bad.Error() {
		t.Errorf("err %v, %d frames, %d read errors (first %q); want nil, 3, 2", s.err, s.n.Load(), s.readErrs.Load(), s.firstErr)
	}
}

// stampedLive hands out frames with the given timestamps, then blocks
// until the deadline is set.
type stampedLive struct {
	ts   []time.Time
	i    int
	wake chan struct{}
}

func (f *stampedLive) ReadFrame() ([]byte, time.Time, int, error) {
	if f.i < len(f.ts) {
		f.i++
		return []byte{byte(f.i), 2, 3}, f.ts[f.i-1], 3, nil
	}
	<-f.wake
	return nil, time.Time{}, 0, errors.New("deadline")
}
func (f *stampedLive) SetReadDeadline(time.Time) error { close(f.wake); return nil }
func (f *stampedLive) Stats() (uint64, uint64, error)  { return uint64(len(f.ts)), 0, nil }
func (f *stampedLive) Close() error                    { return nil }

// TestCaptureCut: every file of a capture ends at Stop's cut, whichever
// socket read a frame stamped after it (a host's answer must not be in
// its view without the packet it answered).
func TestCaptureCut(t *testing.T) {
	c, arts := oneHostCapture(t)
	now := time.Now()
	for _, sc := range []struct {
		dir Direction
		ts  []time.Time
	}{
		{DirIn, []time.Time{now.Add(-2 * time.Second), now.Add(-time.Second), now.Add(time.Hour)}},
		{DirOut, []time.Time{now.Add(-1500 * time.Millisecond), now.Add(2 * time.Hour)}},
	} {
		startFakeStream(t, c, 0, sc.dir, &stampedLive{ts: sc.ts, wake: make(chan struct{})})
	}
	defer c.discard()
	st, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if st.Captured != 5 || st.Cut.Before(now) || st.Cut.After(now.Add(time.Hour)) {
		t.Errorf("captured %d, cut %v; want 5 frames read and the cut at Stop (after %v)", st.Captured, st.Cut, now)
	}
	if err := c.WriteFile("sent.pcapng", DirIn); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"capture.pcapng": 3, "sent.pcapng": 2} {
		f, err := os.Open(arts.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		ng, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, ci, err := ng.ReadPacketData()
			if err != nil {
				break
			}
			if ci.Timestamp.After(st.Cut) {
				t.Errorf("%s: frame stamped %v, after the cut %v", name, ci.Timestamp, st.Cut)
			}
			n++
		}
		f.Close()
		if n != want {
			t.Errorf("%s holds %d frames, want %d (those before the cut)", name, n, want)
		}
	}
}

// droppingLive is a stampedLive whose kernel counters report drops lost
// frames at their first read (they reset at each read).
type droppingLive struct {
	stampedLive
	drops uint64
}

func (f *droppingLive) Stats() (uint64, uint64, error) {
	d := f.drops
	f.drops = 0
	return uint64(len(f.ts)) + d, d, nil
}

// TestCaptureDeclaresDrops: the frames a port's sockets lost (kernel
// drops, frames that could not be read) are declared in each file's
// interface statistics, per direction, so that homatest check knows what
// the capture misses.
func TestCaptureDeclaresDrops(t *testing.T) {
	arts, err := NewArtifacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	topo := &Topology{ID: "ht000000", Hosts: []*Host{{Index: 1, Name: "h1", Port: "p1"}, {Index: 2, Name: "h2", Port: "p2"}}, Artifacts: arts}
	c := &Capture{topo: topo}
	for _, sc := range []struct {
		host  int
		dir   Direction
		drops uint64
	}{{0, DirIn, 3}, {0, DirOut, 2}, {1, DirIn, 0}, {1, DirOut, 5}} {
		startFakeStream(t, c, sc.host, sc.dir, &droppingLive{stampedLive: stampedLive{ts: []time.Time{now.Add(-time.Second)}, wake: make(chan struct{})}, drops: sc.drops})
	}
	defer c.discard()
	st, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if st.KernelDrops != 10 {
		t.Fatalf("kernel drops %d, want 10", st.KernelDrops)
	}
	if err := c.WriteFile("sent.pcapng", DirIn); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]map[int]uint64{"capture.pcapng": {0: 5, 1: 5}, "sent.pcapng": {0: 3, 1: 0}} {
		r, err := pcap.Open(arts.Path(name), pcap.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		got := r.Stats()
		r.Close()
		if !maps.Equal(got.IfaceDrops, want) || got.CaptureDrops != want[0]+want[1] {
			t.Errorf("%s declares drops %d by interface %v, want %v", name, got.CaptureDrops, got.IfaceDrops, want)
		}
	}
}

// backlogLive is a stampedLive whose kernel counters say more frames
// were queued than it hands out before the read deadline: a reader too
// slow to drain its socket by then.
type backlogLive struct {
	stampedLive
	unread uint64
	read   bool
}

func (f *backlogLive) Stats() (uint64, uint64, error) {
	if f.read { // the counters reset at each read
		return 0, 0, nil
	}
	f.read = true
	return uint64(len(f.ts)) + f.unread, 0, nil
}

// TestCaptureDeclaresUnreadBacklog: frames the kernel queued on a capture
// socket before the stop but the stream had not read by its deadline are
// declared as drops (they are not in the files), not lost silently: under
// emulation a port's outbound stream fell 2,900 frames behind and the run's
// delivered.pcapng lacked the last 2.3 s of a host's traffic, undeclared.
func TestCaptureDeclaresUnreadBacklog(t *testing.T) {
	c, arts := oneHostCapture(t)
	now := time.Now()
	startFakeStream(t, c, 0, DirIn, &stampedLive{wake: make(chan struct{})})
	startFakeStream(t, c, 0, DirOut, &backlogLive{stampedLive: stampedLive{ts: []time.Time{now.Add(-time.Second), now.Add(-time.Second / 2)}, wake: make(chan struct{})}, unread: 4})
	defer c.discard()
	st, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if st.Captured != 2 || st.KernelDrops != 4 {
		t.Fatalf("captured %d, kernel drops %d; want 2 read and the 4 left unread declared", st.Captured, st.KernelDrops)
	}
	r, err := pcap.Open(arts.Path("capture.pcapng"), pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	if got := r.Stats(); got.CaptureDrops != 4 {
		t.Errorf("capture.pcapng declares %d drops, want 4", got.CaptureDrops)
	}
}

// oneHostCapture is a capture of one host h1 on port p1 with no stream
// yet, and its run folder.
func oneHostCapture(t *testing.T) (*Capture, *Artifacts) {
	t.Helper()
	arts, err := NewArtifacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &Capture{topo: &Topology{ID: "ht000000", Hosts: []*Host{{Index: 1, Name: "h1", Port: "p1"}}, Artifacts: arts}}, arts
}

// startFakeStream adds to c a running stream of host index host and
// direction dir that reads live, spooled in c's run folder.
func startFakeStream(t *testing.T, c *Capture, host int, dir Direction, live liveCapture) {
	t.Helper()
	s := &stream{host: host, port: c.topo.Hosts[host].Port, dir: dir, done: make(chan struct{}), live: live}
	s.target.Store(-1)
	var err error
	if s.spool, err = newSpool(c.topo.Artifacts, fmt.Sprintf(".capture-test-%d-%s.spool", host, dir)); err != nil {
		t.Fatal(err)
	}
	c.streams = append(c.streams, s)
	go s.run()
}
