package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/internal/nsexec"
)

// regionBytes is the receive buffer region per socket: above HomaModule's
// minimum of nr_cpu_ids·64 KiB + 2,000,000 bytes for up to 900 CPUs.
const regionBytes = 64 << 20

func defaultSocket(domain, typ, proto int) (int, error) { return unix.Socket(domain, typ, proto) }

var realCalls = homaCalls{
	setsockopt: func(fd, level, opt int, val []byte) error {
		if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&val[0])), uintptr(len(val)), 0); e != 0 {
			return e
		}
		return nil
	},
	bind: func(fd int, port uint16, v6 bool) error {
		if v6 {
			return unix.Bind(fd, &unix.SockaddrInet6{Port: int(port)})
		}
		return unix.Bind(fd, &unix.SockaddrInet4{Port: int(port)})
	},
}

// inNetns runs f on a thread switched into the network namespace at path;
// directly when that is the calling thread's own namespace or cannot be
// opened (a sandbox that hides /proc/1: the agent then sees the sysctls of
// its own namespace, if any).
func inNetns(path string, f func() error) error {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return f()
	}
	defer ns.Close()
	if cur, err := netns.Get(); err == nil {
		same := cur.Equal(ns)
		cur.Close()
		if same {
			return f()
		}
	}
	return nsexec.Do(ns, f)
}

// linuxBackend drives kernel Homa sockets: one client socket per address
// family (their ports are assigned, distinct), and one server socket per
// listened port. HomaModule keeps one port table per network namespace for
// both families (homa_sock_bind looks the port up alone), so a port can be
// bound once, in one family; and an AF_INET6 socket does not get IPv4
// requests (measured in the kernel lab with linux_6.13.9: the suite's IPv4
// tester got no answer from an AF_INET6 server; homa_peer.c routes by the
// socket's family). So a server serves IPv4 when the host has an IPv4
// address and listen did not ask for IPv6, else IPv6.
type linuxBackend struct {
	opts        LinuxOptions
	calls       homaCalls
	cnt         *counters
	log         *slog.Logger
	unsupported string
	abi         *homaABI           // the kernel's user API (hello finds it)
	clients     map[bool]*homaSock // by "is IPv6"
	mu          sync.Mutex
	servers     []*homaSock
	cookie      atomic.Uint64
}

func newLinuxBackend(opts LinuxOptions, cnt *counters, log *slog.Logger) backend {
	calls := realCalls
	if opts.calls != nil {
		calls = *opts.calls
	}
	return &linuxBackend{opts: opts, calls: calls, cnt: cnt, log: log, abi: abiMain, clients: map[bool]*homaSock{}}
}

// noProtocol reports whether a socket error says the kernel has no such
// protocol (no Homa module, or one with another IPPROTO_HOMA).
func noProtocol(err error) bool {
	return errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.ESOCKTNOSUPPORT) || errors.Is(err, unix.EPROTOTYPE)
}

// familyOf returns the address family and its name for a.
func familyOf(a netip.Addr) (int, string) {
	if a.Unmap().Is4() {
		return unix.AF_INET, "AF_INET"
	}
	return unix.AF_INET6, "AF_INET6"
}

func (b *linuxBackend) hello(req HelloRequest) (Hello, error) {
	h := Hello{Impl: "linux", Version: b.opts.Version}
	if len(req.Addrs) == 0 {
		return h, errors.New(`"addrs" is empty: give the host's IPv4 and/or IPv6 address`)
	}
	if len(req.Faults) > 0 {
		return h, errors.New("faults: the linux agent has no fault knobs (no capability \"faults\"); use --impl ref")
	}
	// Probe: a kernel without Homa refuses the socket. One that refuses
	// IPPROTO_HOMA 146 but takes 253 has linux_6.1.38's API and wire
	// format (abi2024).
	fam, famName := familyOf(req.Addrs[0])
	fd, err := b.opts.Socket(fam, unix.SOCK_DGRAM, ipprotoHoma)
	if err != nil && noProtocol(err) {
		if fd2, err2 := b.opts.Socket(fam, unix.SOCK_DGRAM, ipprotoHoma2024); err2 == nil {
			b.abi, fd, err = abi2024, fd2, nil
			b.log.Info("HomaModule with IPPROTO_HOMA 253: linux_6.1.38's socket API and the 2024 wire format")
		}
	}
	if err != nil {
		if noProtocol(err) {
			b.unsupported = fmt.Sprintf("Linux kernel has no Homa (socket(%s, SOCK_DGRAM, %d): %v); load homa.ko", famName, ipprotoHoma, err)
			h.Unsupported = b.unsupported
			return h, nil
		}
		return h, fmt.Errorf("socket(%s, SOCK_DGRAM, %d): %v", famName, ipprotoHoma, err)
	}
	unix.Close(fd)
	h.Wire = b.abi.wire
	// HomaModule registers its sysctls in the initial network namespace
	// only (homa_plumbing.c); the agent runs in a host namespace, so it
	// reads and writes them from a thread in the initial one.
	var params Params
	writable := false
	err = b.opts.inSysctlNS(func() error {
		if len(req.Params) > 0 {
			if err := writeSysctls(b.opts.SysctlDir, req.Params); err != nil {
				return err
			}
		}
		var rerr error
		if params, rerr = readSysctls(b.opts.SysctlDir); rerr != nil {
			b.log.Warn("no sysctls", "dir", b.opts.SysctlDir, "err", rerr)
			params = Params{}
		}
		writable = len(params) > 0 && unix.Access(b.opts.SysctlDir, unix.W_OK) == nil
		return nil
	})
	if err != nil {
		return h, err
	}
	params["tick_ns"] = int64(1000000) // HomaModule's timer: 1 ms
	h.Params = params
	for _, a := range req.Addrs {
		a = a.Unmap()
		if b.clients[a.Is6()] != nil {
			b.close()
			return h, fmt.Errorf("addrs: two addresses of the same family (%v): give one IPv4 and one IPv6 at most", a)
		}
		s, err := openHomaSock(b.opts.Socket, b.calls, b.abi, a.Is6(), 0, nil, b.log)
		if err != nil {
			b.close()
			return h, err
		}
		b.clients[a.Is6()] = s
	}
	// On a host with both families the servers are AF_INET unless
	// listen asks for IPv6 (ListenOptions.IPv6): an AF_INET server
	// socket cannot answer an IPv6 client (HomaModule linux_6.13.9
	// counted peer_route_errors and server_cant_create_rpcs for every
	// IPv6 request in the lab).
	if b.clients[false] != nil {
		h.Capabilities = append(h.Capabilities, CapIPv4)
	}
	if b.clients[true] != nil {
		h.Capabilities = append(h.Capabilities, CapIPv6)
	}
	h.Capabilities = append(h.Capabilities, CapGrants, CapPriorities, CapCutoffs, CapNeedAck, CapTimeouts, CapReplyDelay)
	if writable {
		h.Capabilities = append(h.Capabilities, CapParams)
	}
	return h, nil
}

// listen binds a server socket to port: AF_INET6 when o.IPv6 or the
// host has no IPv4 address, else AF_INET (linuxBackend says why one).
func (b *linuxBackend) listen(port uint16, o ListenOptions) error {
	if b.unsupported != "" {
		return errUnsupported(b.unsupported)
	}
	if port >= 32768 {
		return fmt.Errorf(`"port" %d: server ports are 1..32767 (HomaModule: ports from 32768 are client ports)`, port)
	}
	v6 := o.IPv6 || b.clients[false] == nil
	if v6 && b.clients[true] == nil {
		return fmt.Errorf(`"ipv6": this host has no IPv6 address (see hello addrs)`)
	}
	serve := b.serveOne
	if delay := o.ReplyDelay; delay > 0 {
		// Each request is served in a goroutine of its own: it waits
		// there, as an application computing its response would.
		serve = func(s *homaSock, id uint64, peer, req []byte) {
			time.Sleep(delay)
			b.serveOne(s, id, peer, req)
		}
	}
	s, err := openHomaSock(b.opts.Socket, b.calls, b.abi, v6, port, serve, b.log)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.servers = append(b.servers, s)
	b.mu.Unlock()
	return nil
}

// serveOne answers one request received by a server socket.
func (b *linuxBackend) serveOne(s *homaSock, id uint64, peer []byte, req []byte) {
	client, _ := decodeSockaddr(peer, unix.AF_INET, unix.AF_INET6)
	resp, ok := serveRequest(req, client.String(), b.cnt, b.log)
	if !ok {
		return
	}
	if _, err := s.send(peer, resp, id, 0); err != nil {
		b.log.Warn("reply", "id", id, "client", client, "err", err)
	}
}

func (b *linuxBackend) call(ctx context.Context, c Call) (func() Completion, error) {
	if b.unsupported != "" {
		return nil, errUnsupported(b.unsupported)
	}
	dst := c.Dst.Unmap()
	s := b.clients[dst.Is6()]
	if s == nil {
		return nil, fmt.Errorf("%s: %v: this host has no address of that family (see hello addrs)", CodeUnreachable, dst)
	}
	sa := encodeSockaddr(netip.AddrPortFrom(dst, c.Port), unix.AF_INET, unix.AF_INET6)
	return func() Completion {
		return runCall(ctx, c, b.cnt, func(ctx context.Context, req []byte) ([]byte, error) {
			cookie := b.cookie.Add(1)
			ch := s.expect(cookie)
			defer s.forget(cookie)
			if _, err := s.send(sa, req, 0, cookie); err != nil {
				return nil, err
			}
			select {
			case r := <-ch:
				return r.data, r.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, func(err error) bool { return errors.Is(err, unix.ETIMEDOUT) })
	}, nil
}

func (b *linuxBackend) stats(*Stats) {}

func (b *linuxBackend) close() error {
	b.mu.Lock()
	socks := b.servers
	b.servers = nil
	b.mu.Unlock()
	for _, s := range b.clients {
		socks = append(socks, s)
	}
	clear(b.clients)
	for _, s := range socks {
		s.close()
	}
	return nil
}

// homaSock is one kernel Homa socket with its receive buffer region and
// receive loop.
type homaSock struct {
	fd      int
	abi     *homaABI
	region  []byte
	log     *slog.Logger
	serve   func(s *homaSock, id uint64, peer, req []byte) // nil: client socket
	mu      sync.Mutex
	back    []uint32 // buffer pages to hand back in the next recvmsg
	waiters map[uint64]chan rpcResult
	closed  atomic.Bool
	done    chan struct{}
	wmu     sync.Mutex // serialises sendmsg (the region is not involved)
}

// rpcResult is a response or the error of a client RPC.
type rpcResult struct {
	data []byte
	err  error
}

// openHomaSock opens a Homa socket of API abi and the family (IPv6 when
// v6), installs its receive buffer region, binds it to port when port > 0
// (a server: serve is called for each request) and starts its receive
// loop.
func openHomaSock(socket func(int, int, int) (int, error), calls homaCalls, abi *homaABI, v6 bool, port uint16, serve func(*homaSock, uint64, []byte, []byte), log *slog.Logger) (*homaSock, error) {
	fam := unix.AF_INET
	if v6 {
		fam = unix.AF_INET6
	}
	fd, err := socket(fam, unix.SOCK_DGRAM, abi.proto)
	if err != nil {
		return nil, fmt.Errorf("socket(family %d, SOCK_DGRAM, %d): %v", fam, abi.proto, err)
	}
	region, err := unix.Mmap(-1, 0, regionBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mmap %d bytes for the Homa receive buffer: %v", regionBytes, err)
	}
	s := &homaSock{fd: fd, abi: abi, region: region, log: log, serve: serve, waiters: map[uint64]chan rpcResult{}, done: make(chan struct{})}
	args := rcvbufArgs{Start: uint64(uintptr(unsafe.Pointer(&region[0]))), Length: regionBytes}.encode()
	// SO_HOMA_RCVBUF; linux_6.1.38's SO_HOMA_SET_BUF has its number and
	// layout.
	if e := calls.setsockopt(fd, abi.proto, soHomaRcvbuf, args[:]); e != nil {
		s.release()
		return nil, fmt.Errorf("setsockopt(SO_HOMA_RCVBUF, %d bytes): %v", regionBytes, e)
	}
	if port > 0 {
		if err := calls.bind(fd, port, v6); err != nil {
			s.release()
			return nil, fmt.Errorf("bind Homa port %d: %v", port, err)
		}
		if abi.serverOpt {
			var one [4]byte
			binary.NativeEndian.PutUint32(one[:], 1)
			calls.setsockopt(fd, abi.proto, soHomaServer, one[:])
		}
	}
	go s.recvLoop()
	return s, nil
}

func (s *homaSock) expect(cookie uint64) chan rpcResult {
	ch := make(chan rpcResult, 1)
	s.mu.Lock()
	s.waiters[cookie] = ch
	s.mu.Unlock()
	return ch
}

func (s *homaSock) forget(cookie uint64) {
	s.mu.Lock()
	delete(s.waiters, cookie)
	s.mu.Unlock()
}

func (s *homaSock) deliver(cookie uint64, r rpcResult) {
	s.mu.Lock()
	ch := s.waiters[cookie]
	delete(s.waiters, cookie)
	s.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// send is sendmsg with struct homa_sendmsg_args as msg_control and
// msg_controllen 0; it returns the RPC id the kernel assigned.
func (s *homaSock) send(dst, payload []byte, id, cookie uint64) (uint64, error) {
	args := sendmsgArgs{ID: id, Cookie: cookie}.encode()
	iov := unix.Iovec{Base: &payload[0]}
	iov.SetLen(len(payload))
	msg := unix.Msghdr{Name: &dst[0], Namelen: uint32(len(dst)), Iov: &iov, Control: &args[0]}
	msg.SetIovlen(1)
	s.wmu.Lock()
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&msg)), 0)
	s.wmu.Unlock()
	runtime.KeepAlive(payload)
	runtime.KeepAlive(dst)
	if e != 0 {
		return 0, fmt.Errorf("sendmsg: %w", e)
	}
	return decodeSendmsgArgs(&args).ID, nil
}

// recvLoop receives messages until the socket is shut down, handing every
// buffer page back in the next recvmsg.
func (s *homaSock) recvLoop() {
	defer close(s.done)
	var name [128]byte
	for {
		var a recvmsgArgs
		s.mu.Lock()
		n := copy(a.BpageOffsets[:], s.back)
		s.back = s.back[n:]
		s.mu.Unlock()
		a.NumBpages = uint32(n)
		ctrl := s.abi.encodeRecv(&a)
		msg := unix.Msghdr{Name: &name[0], Namelen: uint32(len(name)), Control: &ctrl[0]}
		msg.SetControllen(len(ctrl))
		r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&msg)), 0)
		if s.closed.Load() {
			return
		}
		out := s.abi.decodeRecv(ctrl)
		if e != 0 {
			if s.closed.Load() || e == unix.ESHUTDOWN || e == unix.EBADF {
				return
			}
			if out.ID != 0 && out.ID&1 == 0 {
				s.deliver(out.Cookie, rpcResult{err: fmt.Errorf("homa rpc %d: %w", out.ID, e)})
			} else if e != unix.EINTR && e != unix.EAGAIN {
				s.log.Warn("recvmsg", "err", e)
			}
			continue
		}
		pages := out.BpageOffsets[:min(out.NumBpages, homaMaxBpages)]
		data, err := gatherMessage(s.region, pages, int(r))
		s.mu.Lock()
		s.back = append(s.back, pages...)
		s.mu.Unlock()
		if out.ID&1 == 1 { // a request
			if s.serve != nil && err == nil {
				peer := append([]byte(nil), name[:min(int(msg.Namelen), len(name))]...)
				go s.serve(s, out.ID, peer, data)
			}
			continue
		}
		s.deliver(out.Cookie, rpcResult{data: data, err: err})
	}
}

// close shuts the socket down (waking recvmsg with ESHUTDOWN), waits for the
// receive loop and releases the socket and region.
func (s *homaSock) close() {
	s.closed.Store(true)
	unix.Shutdown(s.fd, unix.SHUT_RDWR)
	<-s.done
	s.mu.Lock()
	for c, ch := range s.waiters {
		ch <- rpcResult{err: errors.New("socket closed")}
		delete(s.waiters, c)
	}
	s.mu.Unlock()
	s.release()
}

func (s *homaSock) release() {
	unix.Close(s.fd)
	unix.Munmap(s.region)
}
