package lab

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"
)

func TestParseSysctl(t *testing.T) {
	s, err := ParseSysctl("net.homa.resend_ticks=50")
	if err != nil || s.Name != "net.homa.resend_ticks" || s.Value != "50" {
		t.Errorf("got %+v, %v", s, err)
	}
	for _, bad := range []string{"net.homa.resend_ticks", "=5", "net/homa/x=1", "net..x=1", "a b=1"} {
		if _, err := ParseSysctl(bad); err == nil || !strings.Contains(err.Error(), "want NAME=VALUE") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestInitScript(t *testing.T) {
	s := initScript("/home/me/homa test", []Sysctl{{"net.homa.resend_ticks", "50"}}, []string{"HOMATEST_TIME_SCALE=10"},
		[]string{"homatest", "run", "--focus", "it's", "a b"})
	for _, want := range []string{
		"mkdir -p '/home/me/homa test' && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share '/home/me/homa test'",
		"echo 50 > /proc/sys/net/homa/resend_ticks ||",
		"export HOMATEST_TIME_SCALE=10",
		`homatest run --focus 'it'\''s' 'a b' </dev/null >/dev/hvc0 2>/dev/hvc1`,
		"echo '" + markStart + "'",
		`echo "` + markExit + `$rc"`,
		"insmod /lib/modules/lab/$m.ko",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("init script lacks %q:\n%s", want, s)
		}
	}
}

func TestConsoleMarkers(t *testing.T) {
	var out bytes.Buffer
	c := console{w: &out, start: time.Now()}
	c.Write([]byte("[    1.0] kernel line\r\n" + markStart + "\r\nsome"))
	c.Write([]byte(" output\n" + markExit + "3\r\n"))
	c.flush()
	if c.exit != 3 || c.boot <= 0 {
		t.Errorf("exit %d boot %v", c.exit, c.boot)
	}
	if !strings.Contains(out.String(), "kernel line\n") || strings.Contains(out.String(), "\r") {
		t.Errorf("console copy %q", out.String())
	}
	var failed console
	failed.Write([]byte("homatest-lab: insmod homa\n" + markExit + "125\n"))
	failed.flush()
	if failed.exit != 125 || len(failed.notes) != 1 || failed.notes[0] != "insmod homa" {
		t.Errorf("failed step: exit %d notes %q", failed.exit, failed.notes)
	}
	var none console
	none.Write([]byte("Kernel panic - not syncing\n"))
	none.flush()
	if none.exit != -1 || !strings.Contains(none.last(), "Kernel panic") {
		t.Errorf("no marker: exit %d, last %q", none.exit, none.last())
	}
}

func TestModuleName(t *testing.T) {
	for file, want := range map[string]string{"sch_netem.ko.xz": "sch_netem", "9pnet-virtio.ko": "9pnet_virtio", "homa.ko.gz": "homa"} {
		if n, ok := moduleName(file); !ok || n != want {
			t.Errorf("%s: %q %v", file, n, ok)
		}
	}
	if _, ok := moduleName("modules.dep"); ok {
		t.Error("modules.dep taken for a module")
	}
}

func TestWriteInitramfs(t *testing.T) {
	dir := t.TempDir()
	bin := dir + "/static"
	// A file that is not ELF is refused as a tool; busybox and homatest
	// are read as they are.
	if err := writeFile(bin, "#!/bin/sh\n"); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err := WriteInitramfs(&b, Image{Busybox: bin, Homatest: bin, Modules: []Module{{Name: "veth", Data: []byte("x")}}, Init: "#!/bin/busybox sh\n"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(b.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.Name] = true
	}
	for _, want := range []string{"init", "bin/busybox", "bin/homatest", "lib/modules/lab/veth.ko", "lab/modules", "dev/console"} {
		if !have[want] {
			t.Errorf("initramfs lacks %s (has %v)", want, have)
		}
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o755) }
