package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/wireshark"
	"github.com/homatest/homatest/spec/wire"
)

// tshark returns the path of tshark, or skips the test when it is absent
// (.ci/run installs Debian's tshark).
func tshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (apt-get install tshark; .ci/run installs it)")
	}
	return p
}

// tsharkEnv isolates tshark from the user's configuration and personal
// plugins (an installed homa.lua would register the protocol twice).
func tsharkEnv(t *testing.T) []string {
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "WIRESHARK_") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
}

// dissectorFile writes homatest wireshark dissector's output to a file.
func dissectorFile(t *testing.T) string {
	t.Helper()
	out, err, _ := run(t, "wireshark", "dissector")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "homa.lua")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tsharkFrames runs tshark with the dissector over capture (two passes, as
// Wireshark's display after loading: the IPv6 priority shift is the
// capture's) and returns, per frame number, every value of the fields
// asked for. It does not touch t, so captures can be read concurrently.
func tsharkFrames(bin, lua, capture string, env []string, extra ...string) (map[int]map[string][]string, error) {
	fields, err := wireshark.Fields()
	if err != nil {
		return nil, err
	}
	// -R frame: the first pass builds a tree, so the dissector reads the IP
	// header there and latches the capture's IPv6 priority shift, as
	// Wireshark's first pass does (it builds trees for its colouring rules).
	args := []string{"-2", "-R", "frame", "-n", "-X", "lua_script:" + lua, "-r", capture, "-T", "json",
		"-e", "frame.number", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "ip.dst", "-e", "ipv6.src",
		"-e", "ipv6.dst", "-e", "ip.dsfield", "-e", "ipv6.tclass"}
	for _, f := range fields {
		args = append(args, "-e", f.Abbr)
	}
	for _, e := range extra {
		args = append(args, "-e", e)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tshark %s: %v: %s", capture, err, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "Lua") || strings.Contains(s, "rror") {
		return nil, fmt.Errorf("tshark %s: %s", capture, s)
	}
	var docs []struct {
		Source struct {
			Layers map[string][]string `json:"layers"`
		} `json:"_source"`
	}
	if err := json.Unmarshal(out, &docs); err != nil {
		return nil, fmt.Errorf("tshark %s: bad JSON: %v", capture, err)
	}
	frames := map[int]map[string][]string{}
	for _, d := range docs {
		l := d.Source.Layers
		n, err := strconv.Atoi(first(l["frame.number"]))
		if err != nil {
			return nil, fmt.Errorf("tshark %s: frame number %q", capture, l["frame.number"])
		}
		frames[n] = l
	}
	return frames, nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func last(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// decodeObjects runs homatest decode -o json on capture and returns its
// packet objects (numbers kept exact).
func decodeObjects(t *testing.T, capture string) []map[string]any {
	t.Helper()
	out, err, _ := run(t, "decode", "-o", "json", capture)
	if err != nil {
		t.Fatalf("decode %s: %v", capture, err)
	}
	var objs []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["summary"]; !ok {
			objs = append(objs, m)
		}
	}
	return objs
}

// flatten turns decode's header object into display-filter names and
// values: common fields are homa.NAME, the type's own homa.TYPE.PATH,
// arrays give every element in order (acks: one list per member).
func flatten(typ wire.PacketType, prefix string, v any, out map[string][]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(typ, p, e, out)
		}
	case []any:
		for _, e := range x {
			flatten(typ, prefix, e, out)
		}
	default:
		name := strings.TrimPrefix(prefix, "common.")
		var ab string
		if strings.HasPrefix(prefix, "common.") {
			ab = wireshark.Abbr(0, name)
		} else {
			ab = wireshark.Abbr(typ, name)
		}
		out[ab] = append(out[ab], fmt.Sprint(x))
	}
}

// omitEmpty are the header fields decode leaves out when zero.
var omitEmpty = map[string]bool{"homa.data.ack.client_port": true, "homa.ack.acks.client_port": true, "homa.grant.resend_all": true}

// rawOnly are dissector fields decode's JSON does not show (bytes no
// rule reads); the test checks only that they are there.
var rawOnly = map[string]bool{"homa.common.ack": true, "homa.data.pad": true, "homa.data.payload": true}

// inLayout reports whether the display-filter field abbr is part of the
// layout of type typ in the named wire version.
func inLayout(typ wire.PacketType, version, abbr string) bool {
	v, err := wire.ParseVersion(version)
	if err != nil {
		return false
	}
	for _, f := range wire.Layout(typ, v) {
		names := []string{f.Name}
		for _, m := range f.Elem {
			names = append(names, f.Name+"."+m.Name)
		}
		for _, n := range names {
			if wireshark.Abbr(typ, n) == abbr {
				return true
			}
		}
	}
	return false
}

// sameValue compares a tshark value with decode's (numbers in any base,
// booleans as 1/0 or True/False).
func sameValue(ts, dec string) bool {
	if ts == dec {
		return true
	}
	a, err1 := strconv.ParseUint(ts, 0, 64)
	b, err2 := strconv.ParseUint(dec, 0, 64)
	if err1 == nil && err2 == nil {
		return a == b
	}
	tb := map[string]string{"1": "true", "True": "true", "0": "false", "False": "false"}
	return tb[ts] != "" && tb[ts] == dec
}

// comparison counts what compareCapture compared.
type comparison struct {
	packets, values int
	perField        map[string]int
	diffs           []string
}

func (c *comparison) diff(format string, args ...any) {
	c.diffs = append(c.diffs, fmt.Sprintf(format, args...))
}

// check compares one value; want "" means decode has none (tshark must
// have none either).
func (c *comparison) check(where, field string, got []string, k int, want string) {
	c.values++
	c.perField[field]++
	var g string
	if k < len(got) {
		g = got[k]
	}
	if want == "" {
		if len(got) > 0 {
			c.diff("%s %s: tshark %q, decode has none", where, field, got)
		}
		return
	}
	if !sameValue(g, want) {
		c.diff("%s %s: tshark %q, decode %q", where, field, got, want)
	}
}

// compareCapture compares every Homa packet (GSO segment) of capture as
// tshark with the dissector shows it (frames) and as homatest decode -o
// json prints it.
func compareCapture(t *testing.T, frames map[int]map[string][]string, capture string, c *comparison) {
	t.Helper()
	objs := decodeObjects(t, capture)
	byFrame := map[int][]map[string]any{}
	for _, o := range objs {
		n, _ := strconv.Atoi(fmt.Sprint(o["frame"]))
		byFrame[n] = append(byFrame[n], o)
	}
	name := filepath.Base(capture)
	for n, l := range frames {
		homa := false
		for k := range l {
			if strings.HasPrefix(k, "homa.") {
				homa = true
			}
		}
		if homa != (len(byFrame[n]) > 0) {
			c.diff("%s frame %d: Homa in tshark %v, in decode %v", name, n, homa, len(byFrame[n]) > 0)
		}
	}
	str := func(o map[string]any, k string) string {
		if v, ok := o[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return ""
	}
	for n, os := range byFrame {
		l := frames[n]
		if l == nil {
			c.diff("%s frame %d: not in tshark's output", name, n)
			continue
		}
		seen := map[string]bool{"frame.number": true}
		for k, o := range os {
			c.packets++
			where := fmt.Sprintf("%s frame %d", name, n)
			if len(os) > 1 {
				where = fmt.Sprintf("%s frame %d.%d", name, n, k+1)
			}
			// Capture time, to the nanosecond.
			ts, err := time.Parse(time.RFC3339Nano, str(o, "time"))
			if err != nil {
				t.Fatal(err)
			}
			sec, frac, _ := strings.Cut(first(l["frame.time_epoch"]), ".")
			c.check(where, "frame.time_epoch", []string{sec + "." + (frac + "000000000")[:9]}, 0,
				fmt.Sprintf("%d.%09d", ts.Unix(), ts.Nanosecond()))
			seen["frame.time_epoch"] = true
			// Addresses and the IP header's TOS / traffic class.
			ip := "ip"
			if a, _ := netip.ParseAddr(str(o, "src")); a.Is6() {
				ip = "ipv6"
			}
			c.check(where, ip+".src", []string{last(l[ip+".src"])}, 0, str(o, "src"))
			c.check(where, ip+".dst", []string{last(l[ip+".dst"])}, 0, str(o, "dst"))
			tos := "ip.dsfield"
			if ip == "ipv6" {
				tos = "ipv6.tclass"
			}
			c.check(where, tos, []string{last(l[tos])}, 0, str(o, "tos"))
			for _, f := range []string{"ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "ip.dsfield", "ipv6.tclass"} {
				seen[f] = true
			}
			// Top-level fields of decode's object.
			typ := wire.PacketType(0)
			if s := str(o, "type"); s != "" {
				if pt, err := wire.ParsePacketType(s); err == nil {
					typ = pt
					c.check(where, "homa.type", l["homa.type"], k, strconv.Itoa(int(pt)))
				} else {
					var code int
					fmt.Sscanf(s, "TYPE(0x%x)", &code)
					c.check(where, "homa.type", l["homa.type"], k, strconv.Itoa(code))
				}
			} else {
				c.check(where, "homa.type", l["homa.type"], k, "")
			}
			top := map[string]string{
				"homa.sport": str(o, "sport"), "homa.dport": str(o, "dport"), "homa.priority": str(o, "priority"),
				"homa.wire": str(o, "wire"), "homa.role": str(o, "role"), "homa.error": str(o, "error"),
				"homa.data.offset": str(o, "offset"), "homa.data.len": str(o, "data_len"),
				"homa.data.segment": str(o, "segment"), "homa.data.segments": str(o, "segments"),
				"homa.data.segment_size_assumed": str(o, "segment_size_assumed"), "homa.hijacked": str(o, "hijacked"),
			}
			if str(o, "role") != "" {
				top["homa.sender_id"] = str(o, "sender_id")
			}
			if str(o, "error") == "" {
				id, _ := strconv.ParseUint(str(o, "sender_id"), 10, 64)
				top["homa.rpc_id"] = strconv.FormatUint(wire.ClientID(id), 10)
			} else {
				top["homa.rpc_id"] = ""
			}
			for f, want := range top {
				if f == "homa.sender_id" {
					continue // compared with the header below when the header is there
				}
				c.check(where, f, l[f], k, want)
				seen[f] = true
			}
			seen["homa.type"] = true
			// The header, field by field.
			hdr := map[string][]string{}
			if h, ok := o["header"]; ok && h != nil {
				flatten(typ, "", h, hdr)
			} else if id := top["homa.sender_id"]; id != "" {
				hdr["homa.sender_id"] = []string{id}
			}
			for f, want := range hdr {
				seen[f] = true
				if len(l[f]) == 0 && len(want) == 1 && want[0] == "0" && !inLayout(typ, str(o, "wire"), f) {
					// decode prints 0 for a field this version lacks
					// (upstream's RESEND priority); the dissector shows
					// no field.
					c.values++
					c.perField[f]++
					continue
				}
				if len(want) == 1 {
					c.check(where, f, l[f], k, want[0])
					continue
				}
				c.values++
				c.perField[f]++
				if strings.Join(l[f], ",") != strings.Join(want, ",") {
					c.diff("%s %s: tshark %q, decode %q", where, f, l[f], want)
				}
			}
			for f, v := range l {
				if seen[f] {
					continue
				}
				switch {
				case omitEmpty[f]:
					c.check(where, f, v, k, "0")
					seen[f] = true
				case rawOnly[f]:
				default:
					c.diff("%s %s: tshark shows %q, decode has no such field", where, f, v)
					seen[f] = true
				}
			}
		}
	}
}

// TestDissectorMatchesDecode runs tshark with the generated dissector over
// every real capture, the fault catalogue and a corpus of edge cases (GSO
// frames, decode errors, upstream, IPv6, VLAN, snap-cut and padded frames,
// plain TCP, ICMP quoting Homa) and requires every field of every packet
// to equal homatest decode -o json's.
func TestDissectorMatchesDecode(t *testing.T) {
	bin := tshark(t)
	lua := dissectorFile(t)
	captures, _ := filepath.Glob(filepath.Join(realDir, "*", "*.pcap"))
	faults, _ := filepath.Glob(filepath.Join(faultsDir, "*.pcapng"))
	if len(captures) < 9 || len(faults) < 30 {
		t.Fatalf("found %d real captures and %d fault captures, want at least 9 and 30", len(captures), len(faults))
	}
	captures = append(captures, faults...)
	captures = append(captures, edgeCorpus(t))
	results := tsharkCaptures(t, bin, lua, captures)
	c := &comparison{perField: map[string]int{}}
	for i, p := range captures {
		compareCapture(t, results[i], p, c)
	}
	sort.Strings(c.diffs)
	if len(c.diffs) > 0 {
		if len(c.diffs) > 30 {
			c.diffs = append(c.diffs[:30], fmt.Sprintf("... %d more", len(c.diffs)-30))
		}
		t.Fatalf("%d differences between tshark with homa.lua and homatest decode:\n%s", len(c.diffs), strings.Join(c.diffs, "\n"))
	}
	// Every field the dissector has was compared somewhere.
	fields, _ := wireshark.Fields()
	for _, f := range fields {
		if c.perField[f.Abbr] == 0 && !rawOnly[f.Abbr] {
			t.Errorf("field %s was never compared (no capture has it)", f.Abbr)
		}
	}
	t.Logf("%d captures, %d Homa packets, %d field values compared, 0 differences", len(captures), c.packets, c.values)
}

// tsharkCaptures runs tshark with the dissector lua over every capture
// and returns each one's frames (tsharkFrames), numbered as in the
// capture. tshark's start-up (about 0.6 s of CPU) was most of the test's
// time when it ran once per capture (13.5 min at load average 35-60), so
// the captures tshark dissects frame by frame are concatenated with
// mergecap -a into one file per CPU and the frame numbers mapped back.
// A capture is read alone, as before, when Wireshark or the dissector
// keeps state across its frames by address (IPv6: the dissector's
// priority shift per host; TCP: conversations, hijacked Homa; IPv4
// fragments: reassembly), where another capture's frames from the same
// addresses could change what it shows; also when pcapgo cannot count
// its frames, or mergecap is missing.
func tsharkCaptures(t *testing.T, bin, lua string, captures []string) []map[int]map[string][]string {
	t.Helper()
	type run struct {
		caps   []int // indexes into captures, in order
		counts []int // each one's frames
		size   int   // captured bytes, to balance the runs
	}
	merge, _ := exec.LookPath("mergecap")
	bins := make([]run, runtime.GOMAXPROCS(0))
	var runs []run
	for i, p := range captures {
		frames, err := readCapFramesErr(p)
		if merge == "" || err != nil || keepsState(frames) {
			runs = append(runs, run{caps: []int{i}})
			continue
		}
		size := 0
		for _, f := range frames {
			size += len(f.data)
		}
		b := &bins[0]
		for k := range bins {
			if bins[k].size < b.size {
				b = &bins[k]
			}
		}
		b.caps, b.counts, b.size = append(b.caps, i), append(b.counts, len(frames)), b.size+size
	}
	for _, b := range bins {
		if len(b.caps) > 0 {
			runs = append(runs, b)
		}
	}
	// Each run one goroutine's job, the largest first.
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].size > runs[b].size })
	dir, env := t.TempDir(), tsharkEnv(t)
	results := make([]map[int]map[string][]string, len(captures))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				errs[k] = tsharkRun(bin, merge, lua, filepath.Join(dir, fmt.Sprintf("run%d.pcapng", k)), env,
					captures, runs[k].caps, runs[k].counts, results)
			}
		}()
	}
	for k := range runs {
		next <- k
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("tshark ran %d times over %d captures", len(runs), len(captures))
	return results
}

// tsharkRun runs tshark over the captures caps (one alone, or several
// concatenated by mergecap into merged, counts their frame counts) and
// stores each one's frames, renumbered as in its own file, in results.
// It does not touch t (runs go concurrently).
func tsharkRun(bin, merge, lua, merged string, env, captures []string, caps, counts []int, results []map[int]map[string][]string) error {
	if counts == nil {
		var err error
		results[caps[0]], err = tsharkFrames(bin, lua, captures[caps[0]], env)
		return err
	}
	args := []string{"-a", "-F", "pcapng", "-w", merged}
	total := 0
	for k, i := range caps {
		args = append(args, captures[i])
		total += counts[k]
	}
	if out, err := exec.Command(merge, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("mergecap: %v: %s", err, out)
	}
	frames, err := tsharkFrames(bin, lua, merged, env)
	if err != nil {
		return err
	}
	if len(frames) != total {
		return fmt.Errorf("tshark read %d frames of %s, the concatenation of %d captures of %d frames", len(frames), merged, len(caps), total)
	}
	off := 0
	for k, i := range caps {
		own := map[int]map[string][]string{}
		for n := 1; n <= counts[k]; n++ {
			l := frames[off+n]
			if l == nil {
				return fmt.Errorf("tshark has no frame %d in %s (frame %d of %s)", off+n, merged, n, captures[i])
			}
			l["frame.number"] = []string{strconv.Itoa(n)}
			own[n] = l
		}
		results[i] = own
		off += counts[k]
	}
	return nil
}

// keepsState reports whether Wireshark could carry state between frames
// of the capture by address: IPv6 but for ICMPv6 informational messages
// (neighbour discovery, MLD: the dissector keeps each IPv6 host's
// priority shift), TCP (conversations) or IPv4 fragments (reassembly).
func keepsState(frames []capFrame) bool {
	for _, f := range frames {
		p := gopacket.NewPacket(f.data, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		if p.Layer(layers.LayerTypeIPv6) != nil {
			if icmp, ok := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6); !ok || icmp.TypeCode.Type() < 128 {
				return true
			}
		}
		if p.Layer(layers.LayerTypeTCP) != nil {
			return true
		}
		if ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok && (ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0) {
			return true
		}
	}
	return false
}

// rawHoma wraps transport bytes (possibly malformed) as wire.Fields.
type rawHoma []byte

func (r rawHoma) PacketType() wire.PacketType      { return 0 }
func (r rawHoma) CommonFields() *wire.CommonFields { return &wire.CommonFields{} }
func (r rawHoma) AppendTo(b []byte, _ wire.EncodeOptions) ([]byte, error) {
	return append(b, r...), nil
}

// edgeCorpus writes a capture of the cases the real captures lack and
// returns its path.
func edgeCorpus(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "edge-corpus.pcapng")
	fw, err := pcap.Create(path, pcap.Interface{Name: "eth0"})
	if err != nil {
		t.Fatal(err)
	}
	c4, s4 := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.1")
	c6, s6 := netip.MustParseAddr("fd00::11"), netip.MustParseAddr("fd00::1")
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 123456789, time.UTC)
	n := 0
	write := func(frame []byte, capLen int) {
		n++
		if capLen <= 0 || capLen > len(frame) {
			capLen = len(frame)
		}
		if err := fw.WritePacket(0, t0.Add(time.Duration(n)*time.Millisecond), frame[:capLen], len(frame), ""); err != nil {
			t.Fatal(err)
		}
	}
	build := func(s pcap.FrameSpec, f wire.Fields, o wire.EncodeOptions) []byte {
		b, err := pcap.BuildFrame(gopacket.NewSerializeBuffer(), s, f, o)
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), b...)
	}
	enc := func(f wire.Fields, v wire.Version) []byte {
		b, err := wire.Encode(f, wire.EncodeOptions{Version: v, FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cl := func(id uint64) wire.CommonFields { return wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: id} }
	sv := func(id uint64) wire.CommonFields {
		return wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: id | 1}
	}
	v4 := pcap.FrameSpec{Src: c4, Dst: s4, Priority: 3}
	v4s := pcap.FrameSpec{Src: s4, Dst: c4, Priority: 7}
	payload := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(0xA0 + i%7)
		}
		return b
	}
	// IPv6 first, at a level both shifts could have written (level 2 << 4
	// = 0x20 = level 1 << 5), then one only shift 4 writes: decode detects
	// the shift from the capture before printing, the dissector on its
	// second pass. The other host writes with shift 5 (a capture of builds
	// before and after HomaModule 548056f): each host's shift is its own,
	// so its 0x40 is level 2, not 4; then it changes builds (0x70: shift 4
	// from there on), and its 0x20 is level 2 again.
	for _, tc := range []struct {
		src         netip.Addr
		prio, shift uint8
	}{{c6, 2, 4}, {c6, 3, 4}, {s6, 2, 5}, {s6, 7, 5}, {s6, 7, 4}, {s6, 2, 4}} {
		common := cl(40)
		if tc.src == s6 {
			common = sv(40)
		}
		dst := s6
		if tc.src == s6 {
			dst = c6
		}
		write(build(pcap.FrameSpec{Src: tc.src, Dst: dst, Priority: tc.prio, IPv6Shift: tc.shift},
			&wire.DataFields{Common: common, MessageLength: 500, Incoming: 500, SegOffset: wire.SegOffsetInSequence, Payload: payload(500)},
			wire.EncodeOptions{FixLengths: true, SetMarks: true}), 0)
	}
	// Every type of the current format.
	cur := wire.EncodeOptions{FixLengths: true, SetMarks: true}
	for _, f := range []wire.Fields{
		&wire.DataFields{Common: cl(2), MessageLength: 3000, Incoming: 2000, Ack: wire.AckEntry{ClientID: 8, ServerPort: 4000},
			CutoffVersion: 2, Retransmit: 1, SegOffset: 1424, Payload: payload(200)},
		&wire.GrantFields{Common: sv(2), Offset: 9000, Priority: 5},
		&wire.ResendFields{Common: sv(2), Offset: 1424, Length: 1000, Priority: 4},
		&wire.ResendFields{Common: cl(2), Offset: 0, Length: wire.ResendAll, Priority: 6},
		&wire.RPCUnknownFields{Common: sv(2)},
		&wire.BusyFields{Common: cl(2)},
		&wire.CutoffsFields{Common: sv(2), UnschedCutoffs: [8]uint32{0, 1, 2, 3, 4000, 15000, 2800, 200}, CutoffVersion: 9},
		&wire.FreezeFields{},
		&wire.NeedAckFields{Common: sv(2)},
		&wire.AckFields{Common: cl(2), Acks: []wire.AckEntry{{ClientID: 4, ServerPort: 4000}, {ClientID: 6, ServerPort: 4001}}},
	} {
		write(build(v4, f, cur), 0)
	}
	// The 2024 format (IP protocol 253).
	o24 := wire.EncodeOptions{Version: wire.Version2024, FixLengths: true, SetMarks: true}
	for _, f := range []wire.Fields{
		&wire.DataFields{Common: cl(10), MessageLength: 100, Incoming: 100,
			Ack: wire.AckEntry{ClientID: 12, ClientPort: 32769, ServerPort: 4000}, CutoffVersion: 1, SegOffset: 0, Payload: payload(100)},
		&wire.GrantFields{Common: sv(10), Offset: 20000, Priority: 2, ResendAll: 1},
		&wire.AckFields{Common: cl(10), Acks: []wire.AckEntry{{ClientID: 4, ClientPort: 32768, ServerPort: 4000}, {ClientID: 6}, {ClientID: 8, ServerPort: 1}}},
	} {
		write(build(v4s, f, o24), 0)
	}
	// Upstream (no marks): DATA, RESEND without priority, and a GRANT,
	// which upstream lacks (a decode error).
	up := wire.EncodeOptions{Version: wire.VersionUpstream, FixLengths: true, SetMarks: true}
	write(build(v4, &wire.DataFields{Common: cl(20), MessageLength: 50, SegOffset: 0, Payload: payload(50)}, up), 0)
	write(build(v4s, &wire.ResendFields{Common: sv(20), Offset: 0, Length: 50}, up), 0)
	g := enc(&wire.GrantFields{Common: sv(20), Offset: 50}, wire.VersionCurrent)
	g[13], g[18], g[19] = 0, 0, 0
	write(build(v4s, rawHoma(g), wire.EncodeOptions{}), 0)
	// TCP-hijacked DATA and ACK, VLAN-tagged DATA.
	hj := v4
	hj.IPProto = wire.IPProtoTCP
	write(build(hj, &wire.DataFields{Common: cl(30), MessageLength: 10, Incoming: 10, SegOffset: 0, Payload: payload(10)}, cur), 0)
	write(build(hj, &wire.AckFields{Common: cl(30), Acks: []wire.AckEntry{{ClientID: 28, ServerPort: 4000}}}, cur), 0)
	vl := v4
	vl.VLAN = 7
	write(build(vl, &wire.DataFields{Common: cl(32), MessageLength: 10, Incoming: 10, SegOffset: 0, Payload: payload(10)}, cur), 0)
	// Decode errors: a GRANT one byte short, an unknown type, 10 bytes,
	// and a DATA header cut by the snap length; a DATA whose payload the
	// snap length cut.
	write(build(v4s, rawHoma(enc(&wire.GrantFields{Common: sv(2), Offset: 1}, wire.VersionCurrent)[:32]), wire.EncodeOptions{}), 0)
	bad := enc(&wire.BusyFields{Common: sv(2)}, wire.VersionCurrent)
	bad[11] = 0x20
	write(build(v4s, rawHoma(bad), wire.EncodeOptions{}), 0)
	write(build(v4s, rawHoma(bad[:10]), wire.EncodeOptions{}), 0)
	d := build(v4, &wire.DataFields{Common: cl(34), MessageLength: 1000, Incoming: 1000, SegOffset: 0, Payload: payload(1000)}, cur)
	write(d, 14+20+40)
	write(d, 14+20+56+100)
	// An IPv4 header claiming 100 bytes more than the frame holds.
	m := build(v4, &wire.BusyFields{Common: cl(36)}, cur)
	binary.BigEndian.PutUint16(m[16:], binary.BigEndian.Uint16(m[16:])+100)
	ipv4Checksum(m[14:34])
	write(m, 0)
	// GSO frames (doff 13 words).
	gso := func(spec pcap.FrameSpec, id uint64, msgLen uint32, offs []uint32, sizes []int) []byte {
		h := enc(&wire.DataFields{Common: cl(id), MessageLength: msgLen, Incoming: msgLen, SegOffset: offs[0]}, wire.VersionCurrent)
		h[12] = wire.DoffGSO
		b := append([]byte(nil), h[:wire.DataHeaderLen]...)
		for i, o := range offs {
			if i > 0 {
				b = binary.BigEndian.AppendUint32(b, o)
			}
			b = append(b, payload(sizes[i])...)
		}
		return build(spec, rawHoma(b), wire.EncodeOptions{})
	}
	three := gso(v4, 50, 10000, []uint32{4000, 5424, 6848}, []int{1424, 1424, 100})
	write(three, 0)
	write(gso(pcap.FrameSpec{Src: c6, Dst: s6, Priority: 3, IPv6Shift: 4}, 52, 3000, []uint32{0, 1404}, []int{1404, 500}), 0)
	write(gso(v4, 54, 5000, []uint32{0, 1000, 2000}, []int{1000, 1000, 300}), 0) // segment size inferred
	write(three, 14+20+56+1000)                                                  // no seg header captured: assumed
	broken := append([]byte(nil), three...)
	binary.BigEndian.PutUint32(broken[14+20+56+1424:], 77)
	write(broken, 0) // a seg header that fits no segment size
	write(build(v4, &wire.DataFields{Common: cl(56), MessageLength: 4000, Incoming: 4000, SegOffset: 0, Payload: payload(1500)},
		wire.EncodeOptions{SetMarks: true, FixLengths: false}), 0) // doff 0: not GSO
	one := enc(&wire.DataFields{Common: cl(58), MessageLength: 4000, Incoming: 4000, SegOffset: 0, Payload: payload(1500)}, wire.VersionCurrent)
	one[12] = wire.DoffGSO
	write(build(v4, rawHoma(one), wire.EncodeOptions{}), 0) // doff 13, too long for a segment, no seg header: one segment
	// Plain TCP, and ICMP quoting a Homa header: not Homa packets.
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 80)
	tcp[12], tcp[13] = 0x50, 0x18
	write(build(pcap.FrameSpec{Src: c4, Dst: s4, IPProto: wire.IPProtoTCP}, rawHoma(append(tcp, "GET /\r\n"...)), wire.EncodeOptions{}), 0)
	quoted := d[14 : 14+20+40]
	icmp := append([]byte{3, 3, 0, 0, 0, 0, 0, 0}, quoted...)
	write(build(pcap.FrameSpec{Src: s4, Dst: c4, IPProto: 1}, rawHoma(icmp), wire.EncodeOptions{}), 0)
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// ipv4Checksum recomputes the header checksum of an IPv4 header.
func ipv4Checksum(h []byte) {
	h[10], h[11] = 0, 0
	binary.BigEndian.PutUint16(h[10:], wire.IPv4HeaderChecksum(h))
}

// TestWiresharkDissectorCmd: the command prints the checked-in dissector,
// --install writes it into --dir, and --dir alone is a usage error.
func TestWiresharkDissectorCmd(t *testing.T) {
	out, err, _ := run(t, "wireshark", "dissector")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../../../report/wireshark/homa.lua")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("homatest wireshark dissector differs from report/wireshark/homa.lua (go test ./report/wireshark -update)")
	}
	dir := filepath.Join(t.TempDir(), "plugins")
	out, err, code := run(t, "wireshark", "dissector", "--install", "--dir", dir)
	if err != nil || !strings.Contains(out, filepath.Join(dir, "homa.lua")) {
		t.Fatalf("--install: %q, %v (exit %d)", out, err, code)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "homa.lua")); string(got) != string(want) {
		t.Errorf("--install wrote %d bytes, want the dissector", len(got))
	}
	if _, err, code := run(t, "wireshark", "dissector", "--dir", dir); code != ExitUsage || !strings.Contains(err.Error(), "--install") {
		t.Errorf("--dir without --install: exit %d, %v", code, err)
	}
	if _, err, code := run(t, "wireshark", "dissector", "--install", "--dir", "/proc/nope"); code != ExitUsage || !strings.Contains(err.Error(), "--dir") {
		t.Errorf("--install into /proc: exit %d, %v", code, err)
	}
	// A --dir that does not exist is not created (a mistyped one was,
	// parents and all).
	missing := filepath.Join(t.TempDir(), "no", "plugins")
	if _, err, code := run(t, "wireshark", "dissector", "--install", "--dir", missing); code != ExitUsage || err == nil || !strings.Contains(err.Error(), "--dir "+missing+": no folder "+filepath.Dir(missing)+" to make it in (create it first") {
		t.Errorf("--install --dir %s: exit %d, %v; want 2 and no folder to make it in", missing, code, err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("--install --dir %s created %s (%v)", missing, filepath.Dir(missing), err)
	}
}

// TestDissectorLoadedTwice: the dissector installed as a personal plugin
// and named again with -X lua_script:homa.lua (the help's example) loads
// twice; the second copy stands aside. On the old code tshark printed
// "Lua: Error during loading: ... Proto_new: there cannot be two protocols
// with the same description" (and dissected with the plugin's copy).
func TestDissectorLoadedTwice(t *testing.T) {
	bin := tshark(t)
	lua := dissectorFile(t)
	env := tsharkEnv(t)
	var home string
	for _, kv := range env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = h
		}
	}
	plugins := filepath.Join(home, ".local/lib/wireshark/plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err, _ := run(t, "wireshark", "dissector", "--install", "--dir", plugins); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-X", "lua_script:"+lua, "-r", "testdata/faults/need-ack-right-after-response.pcapng", "-Y", "homa", "-T", "fields", "-e", "homa.type")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || len(strings.Fields(string(out))) == 0 || strings.Contains(stderr.String(), "Lua") {
		t.Fatalf("tshark with the dissector installed and named: %v, %q: %s", err, out, stderr.String())
	}
}
