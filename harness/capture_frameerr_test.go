package harness

import (
	"errors"
	"testing"
	"time"

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
// (pcap.FrameError, as recvmsg EFAULT on skbs HomaModule's GRO built) is
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
