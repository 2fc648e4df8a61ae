package netem

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Switch is the running user-space switch (backend "switch"): one
// forwarding thread that reads every port's AF_PACKET socket, runs the
// frames through a Core (learning bridge, plan, per-port impairments) and
// sends them when due. Stats and Close are safe to call from any goroutine.
type Switch struct {
	mu       sync.Mutex
	core     *Core
	socks    []packetSock
	txErrors []uint64
	rxErrors []uint64                               // frames recvmmsg could not copy (skipped)
	rxFirst  []string                               // the first such error per port
	rxSeg    []uint64                               // GSO super-frames segmented on arrival
	rxBig    []uint64                               // super-frames too large that could not be segmented
	mtu      []int                                  // each port's interface MTU (IP packet bytes)
	recvFn   func(fd int, rx *rxBatch) (int, error) // nil: rx.recv (tests inject errors)
	rxDrops  []uint64                               // kernel drops read from PACKET_STATISTICS so far
	lag      lagHist                                // read time - kernel receive stamp
	sendLag  lagHist                                // send time - scheduled departure
	rec      *recorder
	free     [][]byte
	last     time.Duration // latest time given to the core
	spin     time.Duration

	wake      int // eventfd that stops the loop
	done      chan struct{}
	loopErr   error
	closeOnce sync.Once
	closeErr  error
}

// poolBuf is the size of pooled frame buffers (a 1514-byte frame plus VLAN tags).
const poolBuf = 2048

// StartSwitch opens one AF_PACKET socket per port inside network namespace
// ns (the sockets are created on a thread switched into ns, which is
// switched back afterwards) and starts forwarding. The interfaces must
// exist in ns and be up; the caller owns them (and the namespace), and
// should turn off tx checksum offload on host veths whose TCP or UDP
// crosses the switch (ethtool -K DEV tx off), since frames with partial
// checksums are re-sent as they are (harness.Build does this on the switch
// ports, which is enough for veths: TCP crosses the switch). ctx bounds
// the start only (as harness.Fabric.Start): the switch runs until Close.
// Errors name the port or rule at fault.
func StartSwitch(ctx context.Context, ns netns.NsHandle, cfg SwitchConfig) (*Switch, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	core, err := NewCore(cfg.Ports, cfg.Seed, cfg.Plan)
	if err != nil {
		return nil, err
	}
	buf := cfg.SocketBuffer
	if buf == 0 {
		buf = DefaultSocketBuffer
	}
	names := make([]string, len(cfg.Ports))
	for i, p := range cfg.Ports {
		names[i] = p.Name
	}
	socks, err := openPacketSockets(ns, names, buf)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		closeSocks(socks)
		return nil, fmt.Errorf("netem: eventfd: %w", err)
	}
	rec, err := newRecorder(cfg.Record, cfg.RecordPath, cfg.Ports)
	if err != nil {
		closeSocks(socks)
		unix.Close(wake)
		return nil, err
	}
	n := len(socks)
	s := &Switch{core: core, socks: socks, txErrors: make([]uint64, n), rxDrops: make([]uint64, n), rec: rec,
		rxErrors: make([]uint64, n), rxFirst: make([]string, n), rxSeg: make([]uint64, n), rxBig: make([]uint64, n), mtu: portMTUs(socks),
		wake: wake, done: make(chan struct{}), spin: cfg.Spin}
	if s.spin == 0 {
		s.spin = DefaultSpin
	}
	core.OnDrop = func(port int, f *Frame, r DropReason, detail string) {
		s.rec.dropped(port, s.wall(s.last), f, r, detail)
		s.put(f.Data)
	}
	go s.run()
	return s, nil
}

// portMTUs returns the MTU of each port's interface (0: unknown).
func portMTUs(socks []packetSock) []int {
	m := make([]int, len(socks))
	for i, k := range socks {
		m[i] = k.mtu
	}
	return m
}

func closeSocks(socks []packetSock) {
	for _, s := range socks {
		unix.Close(s.fd)
	}
}

// The switch clock is Unix ns (the kernel's SO_TIMESTAMPNS clock) as a
// Duration since the Unix epoch.
func clockNow() time.Duration { return time.Duration(time.Now().UnixNano()) }

func (s *Switch) wall(t time.Duration) time.Time { return time.Unix(0, int64(t)) }

func (s *Switch) get(n int) []byte {
	if n <= poolBuf && len(s.free) > 0 {
		b := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		return b[:n]
	}
	if n <= poolBuf {
		return make([]byte, n, poolBuf)
	}
	return make([]byte, n)
}

func (s *Switch) put(b []byte) {
	if cap(b) == poolBuf && len(s.free) < 4096 {
		s.free = append(s.free, b)
	}
}

// run is the forwarding loop, on one locked OS thread with 1 ns timer slack.
func (s *Switch) run() {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	setTimerSlack()
	fds := make([]unix.PollFd, len(s.socks)+1)
	for i, k := range s.socks {
		fds[i] = unix.PollFd{Fd: int32(k.fd), Events: unix.POLLIN}
	}
	fds[len(s.socks)] = unix.PollFd{Fd: int32(s.wake), Events: unix.POLLIN}
	rx := newRxBatch(32)
	tx := newTxBatch(32)
	var sent []*Frame
	for {
		s.mu.Lock()
		now := max(clockNow(), s.last)
		s.last = now
		s.transmit(now, tx, &sent)
		next, ok := s.core.Next()
		s.mu.Unlock()
		wait := time.Duration(-1)
		if ok {
			wait = max(0, next-now-s.spin)
		}
		if err := ppoll(fds, wait); err != nil {
			s.loopErr = fmt.Errorf("netem: ppoll: %w", err)
			return
		}
		if fds[len(s.socks)].Revents != 0 {
			return
		}
		s.mu.Lock()
		for p := range s.socks {
			if fds[p].Revents == 0 {
				continue
			}
			if err := s.receive(p, rx); err != nil {
				s.mu.Unlock()
				s.loopErr = err
				return
			}
			if fds[p].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 && fds[p].Revents&unix.POLLIN == 0 {
				// A socket error with nothing to read (ENETDOWN after the
				// port went away): read it once so poll stops reporting it.
				unix.GetsockoptInt(s.socks[p].fd, unix.SOL_SOCKET, unix.SO_ERROR)
			}
		}
		s.mu.Unlock()
	}
}

// receive drains up to 8 batches from port p into the core.
func (s *Switch) receive(p int, rx *rxBatch) error {
	for range 8 {
		recv := (*rxBatch).recv
		if s.recvFn != nil {
			recv = func(rx *rxBatch, fd int) (int, error) { return s.recvFn(fd, rx) }
		}
		n, err := recv(rx, s.socks[p].fd)
		if err != nil {
			if errors.Is(err, unix.EBADF) || errors.Is(err, unix.ENOTSOCK) {
				return fmt.Errorf("netem: port %s: recvmmsg: %w", s.socks[p].name, err)
			}
			// The kernel could not copy the next frame (EFAULT on an skb
			// HomaModule's GRO built): it is consumed; count it and go on.
			s.rxErrors[p]++
			if s.rxFirst[p] == "" {
				s.rxFirst[p] = "recvmmsg: " + err.Error()
			}
			return nil
		}
		for i := range n {
			data, ts := rx.frame(i)
			now := max(clockNow(), s.last)
			s.last = now
			stamp := time.Duration(ts)
			if ts == 0 {
				stamp = now
			}
			s.lag.add(now - stamp)
			s.ingest(now, stamp, p, data)
		}
		if n < len(rx.hdrs) {
			return nil
		}
	}
	return nil
}

// ingest hands one frame read on port p to the core (a copy: data is the
// receive buffer). A frame larger than the port's MTU is a GSO super-frame
// (the sender's veth left segmentation to the "NIC"): it is segmented as a
// NIC would (SegmentFrame), or counted and dropped when it cannot be.
func (s *Switch) ingest(now, stamp time.Duration, p int, data []byte) {
	frames := [][]byte{data}
	if s.mtu[p] > 0 && len(data) > s.mtu[p]+ethHeaderRoom {
		if frames = SegmentFrame(data, s.mtu[p]); frames == nil {
			s.rxBig[p]++
			return
		}
		s.rxSeg[p]++
	}
	for _, f := range frames {
		b := s.get(len(f))
		copy(b, f)
		s.core.IngressStamped(now, stamp, p, b)
	}
}

// transmit sends every frame due by now, port by port, in sendmmsg batches.
func (s *Switch) transmit(now time.Duration, tx *txBatch, sent *[]*Frame) {
	ts := s.wall(now)
	for p, k := range s.socks {
		e := s.core.Egress(p)
		for {
			f := e.Pop(now)
			if f == nil {
				break
			}
			s.rec.forwarded(p, ts, f)
			s.sendLag.add(now - f.Departure)
			tx.add(f.Data)
			*sent = append(*sent, f)
			if tx.full() {
				s.flush(p, k.fd, tx, sent)
			}
		}
		if tx.n > 0 {
			s.flush(p, k.fd, tx, sent)
		}
	}
}

func (s *Switch) flush(p, fd int, tx *txBatch, sent *[]*Frame) {
	_, failed, _ := tx.send(fd)
	s.txErrors[p] += uint64(failed)
	for i, f := range *sent {
		s.put(f.Data)
		(*sent)[i] = nil
	}
	*sent = (*sent)[:0]
}

// Stats returns the switch's counters (per port: received, sent, send
// errors, drops by reason, alterations) and the fault-plan hits.
func (s *Switch) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.core.Stats()
	st.ReadLagP50, st.ReadLagP99 = s.lag.quantile(0.5), s.lag.quantile(0.99)
	st.SendLagP50, st.SendLagP99 = s.sendLag.quantile(0.5), s.sendLag.quantile(0.99)
	s.readKernelDrops()
	for i := range st.Ports {
		st.Ports[i].RxKernelDrops = s.rxDrops[i]
		st.Ports[i].RxErrors, st.Ports[i].FirstRxError = s.rxErrors[i], s.rxFirst[i]
		st.Ports[i].RxSegmented, st.Ports[i].RxOversize = s.rxSeg[i], s.rxBig[i]
		st.Ports[i].TxErrors = s.txErrors[i]
		st.Ports[i].TxFrames -= min(st.Ports[i].TxFrames, s.txErrors[i])
	}
	return st
}

// readKernelDrops adds the kernel's drop counters of each open socket
// (PACKET_STATISTICS reads and resets them). Called with s.mu held.
func (s *Switch) readKernelDrops() {
	for i, k := range s.socks {
		if st, err := unix.GetsockoptTpacketStats(k.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			s.rxDrops[i] += uint64(st.Drops)
		}
	}
}

// Close stops forwarding (frames still queued or delayed are discarded),
// closes the sockets and finishes the record. It returns the first error
// of the forwarding loop or the record; it is safe to call more than once.
func (s *Switch) Close() error {
	s.closeOnce.Do(func() {
		one := [8]byte{1}
		_, _ = unix.Write(s.wake, one[:])
		<-s.done
		s.mu.Lock()
		defer s.mu.Unlock()
		s.readKernelDrops()
		closeSocks(s.socks)
		s.socks = nil
		unix.Close(s.wake)
		s.closeErr = errors.Join(s.loopErr, s.rec.close())
	})
	return s.closeErr
}
