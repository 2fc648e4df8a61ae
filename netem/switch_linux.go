package netem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Switch is the running user-space switch (backend "switch"): one
// forwarding thread that reads every port's AF_PACKET receive ring, runs
// the frames through a Core (learning bridge, plan, per-port impairments)
// and sends them when due. The thread runs at nice -10 where the process
// may raise its priority (CAP_SYS_NICE), so that hosts and other work on
// the machine do not starve it: a hardware switch does not share their
// CPUs (BenchmarkSwitch beside stress-ng: 0.99-1.00 of frames delivered
// against 0.91-0.98 at nice 0). Every frame that reaches a port and is not
// delivered is counted under a drop reason, the kernel's own losses on
// the switch's sockets and ports included (DropIngress to DropSend).
// Stats and Close are safe to call from any goroutine.
type Switch struct {
	mu    sync.Mutex
	core  *Core
	socks []packetSock
	port  []sockCounters // per port: the socket side's drops and segmentations
	// readCopy reads a ring's TP_STATUS_COPY frame from the socket
	// (afpacket.SlotRing.Read; nil: recvmsg; tests inject errors).
	readCopy func(fd int, buf []byte) (int, error)
	mtu      []int    // each port's interface MTU (IP packet bytes)
	lag      lagHist  // read time - kernel receive stamp
	sendLag  lagHist  // send time - scheduled departure
	ingress  *ingress // the ports' interface drop counters
	rec      *recorder
	free     [][]byte
	last     time.Duration // latest time given to the core
	spin     time.Duration

	tid       atomic.Int32  // the forwarding thread's id, once it runs
	cpuStart  time.Duration // its CPU time when the loop began (set before tid)
	cpuAtExit time.Duration // its CPU time in the loop (set before done closes)

	wake      int // eventfd that stops the loop
	stopping  atomic.Bool
	done      chan struct{}
	loopErr   error
	closeOnce sync.Once
	closeErr  error
}

// sockCounters are a port's counters kept by the socket side of the
// switch (the Core keeps the rest).
type sockCounters struct {
	drops      DropCounts // Ring, Unreadable, Oversize, Send
	firstRx    string     // the first error that made a frame unreadable
	segmented  uint64     // GSO super-frames segmented on arrival
	sendBytes  uint64     // bytes of the frames the interface refused
	firstSend  error      // the first send error
	sendFailed func(i int, err error)
}

// rxBudget is how many frames the forwarding thread reads from one port
// before it looks at the other ports and at frames due to leave.
const rxBudget = 256

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
	ring := cfg.RxRing
	if ring == 0 {
		ring = DefaultRxRing
	}

	names := make([]string, len(cfg.Ports))
	for i, p := range cfg.Ports {
		names[i] = p.Name
	}
	socks, err := openPacketSockets(ns, names, buf, ring)
	if err != nil {
		return nil, err
	}
	ing, err := openIngress(ns, socks)
	if err != nil {
		closeSocks(socks)
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		closeSocks(socks)
		ing.close()
		return nil, fmt.Errorf("netem: eventfd: %w", err)
	}
	rec, err := newRecorder(cfg.Record, cfg.RecordPath, cfg.Ports)
	if err != nil {
		closeSocks(socks)
		ing.close()
		unix.Close(wake)
		return nil, err
	}
	s := &Switch{core: core, socks: socks, rec: rec, ingress: ing, mtu: portMTUs(socks),
		wake: wake, done: make(chan struct{}), spin: cfg.Spin}
	s.init()
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

// init sets up the per-port counters.
func (s *Switch) init() {
	s.port = make([]sockCounters, len(s.socks))
}

// portMTUs returns the MTU of each port's interface (0: unknown).
func portMTUs(socks []packetSock) []int {
	m := make([]int, len(socks))
	for i, k := range socks {
		m[i] = k.mtu
	}
	return m
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
	// The thread's settings below are its own: it is not handed back
	// to the runtime (a goroutine that exits locked ends its thread).
	runtime.LockOSThread()
	setTimerSlack()
	_ = unix.Setpriority(unix.PRIO_PROCESS, 0, -10)
	// The thread may have run other goroutines before: its CPU time
	// counts from here.
	tid := unix.Gettid()
	s.cpuStart = threadCPU(tid)
	s.tid.Store(int32(tid))
	defer func() { s.cpuAtExit = threadCPU(tid) - s.cpuStart }()
	fds := make([]unix.PollFd, len(s.socks)+1)
	for i, k := range s.socks {
		fds[i] = unix.PollFd{Fd: int32(k.fd), Events: unix.POLLIN}
	}
	fds[len(s.socks)] = unix.PollFd{Fd: int32(s.wake), Events: unix.POLLIN}
	tx := newTxBatch(64)
	var sent []*Frame
	var lastRx time.Duration
	for {
		s.mu.Lock()
		now := max(clockNow(), s.last)
		s.last = now
		s.transmit(now, tx, &sent)
		// The rings are read without a system call: look before sleeping.
		got, err := s.receiveAll()
		next, ok := s.core.Next()
		s.mu.Unlock()
		if err != nil {
			s.loopErr = err
			return
		}
		if got > 0 {
			lastRx = now
			continue
		}
		if s.stopping.Load() {
			return
		}
		if s.spin > 0 && now-lastRx < s.spin {
			// Frames came a moment ago: poll on rather than sleep, since
			// a thread woken for every frame spends more time switching
			// than forwarding (8,000 sleeps per 20,000 frames measured).
			continue
		}
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
		for p := range s.socks {
			if r := fds[p].Revents; r&(unix.POLLERR|unix.POLLNVAL) != 0 && r&unix.POLLIN == 0 {
				// A socket error with nothing to read (ENETDOWN after the
				// port went away): read it once so poll stops reporting it.
				unix.GetsockoptInt(s.socks[p].fd, unix.SOL_SOCKET, unix.SO_ERROR)
			}
		}
	}
}

// receiveAll reads up to rxBudget frames from every port's ring and
// returns how many it read. Called with s.mu held.
func (s *Switch) receiveAll() (int, error) {
	n := 0
	for p := range s.socks {
		k, err := s.receive(p)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// receive reads up to rxBudget frames from port p's ring into the core.
// A frame the kernel could not hand over whole is counted (DropUnreadable)
// and skipped; only a broken socket is an error.
func (s *Switch) receive(p int) (int, error) {
	k := &s.socks[p]
	// One clock read per batch, not per frame (clock_gettime was 14% of
	// the forwarding thread's time at full rate): a frame's time is the
	// later of that and the frame's kernel receive stamp.
	now := max(clockNow(), s.last)
	for i := range rxBudget {
		data, ts, ok, err := k.ring.Read(s.readCopy)
		if !ok {
			return i, nil
		}
		switch {
		case errors.Is(err, unix.EBADF) || errors.Is(err, unix.ENOTSOCK):
			return i, fmt.Errorf("netem: port %s: %w", k.name, err)
		case err != nil:
			// The kernel could not hand the frame over (EFAULT on an
			// oversize frame's clone whose pages the sender took back,
			// see DropUnreadable): it is consumed; count it.
			s.unreadable(p, err.Error())
		default:
			stamp := time.Duration(ts)
			if ts == 0 {
				stamp = now
			}
			now = max(now, stamp)
			s.last = now
			s.lag.add(now - stamp)
			s.ingest(now, stamp, p, data)
		}
		k.ring.Release()
	}
	return rxBudget, nil
}

// unreadable counts a frame of port p the switch could not read.
func (s *Switch) unreadable(p int, why string) {
	c := &s.port[p]
	c.drops.Unreadable++
	if c.firstRx == "" {
		c.firstRx = why
	}
}

// ingest hands one frame read on port p to the core (a copy: data is the
// receive buffer). A frame larger than the port's MTU is a GSO super-frame
// (the sender's veth left segmentation to the "NIC"): it is segmented as a
// NIC would (SegmentFrame), or counted and dropped when it cannot be.
func (s *Switch) ingest(now, stamp time.Duration, p int, data []byte) {
	frames := [][]byte{data}
	if s.mtu[p] > 0 && len(data) > s.mtu[p]+ethHeaderRoom {
		if frames = SegmentFrame(data, s.mtu[p]); frames == nil {
			s.port[p].drops.Oversize++
			return
		}
		s.port[p].segmented++
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
	c := &s.port[p]
	if c.sendFailed == nil {
		c.sendFailed = func(i int, err error) {
			c.drops.Send++
			c.sendBytes += uint64(len((*sent)[i].Data))
			if c.firstSend == nil {
				c.firstSend = err
			}
		}
	}
	tx.send(fd, c.sendFailed)
	for i, f := range *sent {
		s.put(f.Data)
		s.core.Release(f)
		(*sent)[i] = nil
	}
	*sent = (*sent)[:0]
}

// Stats returns the switch's counters (per port: received, sent, drops by
// reason, alterations) and the fault-plan hits.
func (s *Switch) Stats() Stats {
	ingress := s.ingress.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.core.Stats()
	st.ReadLagP50, st.ReadLagP99 = s.lag.quantile(0.5), s.lag.quantile(0.99)
	st.SendLagP50, st.SendLagP99 = s.sendLag.quantile(0.5), s.sendLag.quantile(0.99)
	select {
	case <-s.done:
		st.ForwardingCPU = s.cpuAtExit
	default: // the thread is still in run
		if tid := s.tid.Load(); tid != 0 {
			st.ForwardingCPU = threadCPU(int(tid)) - s.cpuStart
		}
	}
	s.readKernelDrops()
	for i := range st.Ports {
		c := &s.port[i]
		d := c.drops
		if i < len(ingress) {
			d.Ingress = ingress[i]
		}
		ps := &st.Ports[i]
		ps.Drops.sum(d)
		st.Drops.sum(d)
		ps.FirstRxError, ps.RxSegmented = c.firstRx, c.segmented
		ps.TxFrames -= min(ps.TxFrames, c.drops.Send)
		ps.TxBytes -= min(ps.TxBytes, c.sendBytes)
	}
	return st
}

// readKernelDrops adds the kernel's drop counters of each open socket
// (ring full). Called with s.mu held.
func (s *Switch) readKernelDrops() {
	for i := range s.socks {
		s.port[i].drops.Ring += s.socks[i].kernelDrops()
	}
}

// Close stops forwarding (frames still queued or delayed are discarded),
// closes the sockets and finishes the record. It returns the first error
// of the forwarding loop or the record; it is safe to call more than once.
func (s *Switch) Close() error {
	s.closeOnce.Do(func() {
		s.stopping.Store(true)
		one := [8]byte{1}
		_, _ = unix.Write(s.wake, one[:])
		<-s.done
		s.mu.Lock()
		defer s.mu.Unlock()
		s.readKernelDrops()
		closeSocks(s.socks)
		s.socks = nil
		s.ingress.close()
		unix.Close(s.wake)
		s.closeErr = errors.Join(s.loopErr, s.rec.close())
	})
	return s.closeErr
}

// ingress reads the switch ports' interface drop counters (rx_dropped)
// through a netlink handle in the switch namespace: the frames the kernel
// dropped on a port before any socket saw them (DropIngress). Counts are
// since the switch started; after close, the last ones read.
type ingress struct {
	mu    sync.Mutex
	h     *netlink.Handle
	index []int
	base  []uint64
	last  []uint64
}

// openIngress opens the netlink handle in ns and reads the counters of
// socks' interfaces as the baseline.
func openIngress(ns netns.NsHandle, socks []packetSock) (*ingress, error) {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netem: netlink in the switch namespace: %w", err)
	}
	g := &ingress{h: h, last: make([]uint64, len(socks))}
	for _, k := range socks {
		g.index = append(g.index, k.ifindex)
	}
	if g.base, err = g.counters(); err != nil {
		h.Close()
		return nil, err
	}
	return g, nil
}

// counters reads each port's rx_dropped.
func (g *ingress) counters() ([]uint64, error) {
	out := make([]uint64, len(g.index))
	for i, idx := range g.index {
		l, err := g.h.LinkByIndex(idx)
		if err != nil {
			return nil, fmt.Errorf("netem: port %d statistics: %w", i, err)
		}
		if st := l.Attrs().Statistics; st != nil {
			out[i] = st.RxDropped
		}
	}
	return out, nil
}

// update reads the counters into g.last (a port that is gone keeps its
// last count). Called with g.mu held.
func (g *ingress) update() {
	if g.h == nil {
		return
	}
	if c, err := g.counters(); err == nil {
		for i := range c {
			g.last[i] = c[i] - min(c[i], g.base[i])
		}
	}
}

// read returns each port's drops since the start (nil g: none).
func (g *ingress) read() []uint64 {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.update()
	return slices.Clone(g.last)
}

// close reads the counters a last time and closes the handle.
func (g *ingress) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.update()
	if g.h != nil {
		g.h.Close()
		g.h = nil
	}
}

// threadCPU returns the CPU time thread tid of this process has run
// (/proc/self/task/TID/schedstat's first field, ns), or 0 when it cannot
// be read.
func threadCPU(tid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ns)
}
