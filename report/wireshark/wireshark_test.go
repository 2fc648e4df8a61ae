package wireshark

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

var update = flag.Bool("update", false, "rewrite homa.lua")

// TestCheckedInDissector keeps homa.lua, the copy in the repository,
// equal to what Generate writes from spec/wire (go test -update rewrites
// it).
func TestCheckedInDissector(t *testing.T) {
	var b bytes.Buffer
	if err := Generate(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(FileName, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(FileName)
	if err != nil {
		t.Fatalf("%v (go test ./report/wireshark -update writes it)", err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("%s is not what spec/wire generates now: run go test ./report/wireshark -update", FileName)
	}
}

// TestFieldsFromLayout checks that every layout field of every version
// becomes one display-filter field with a label, under HomaModule's names.
func TestFieldsFromLayout(t *testing.T) {
	fields, err := Fields()
	if err != nil {
		t.Fatal(err)
	}
	byAbbr := map[string]Field{}
	for _, f := range fields {
		if _, dup := byAbbr[f.Abbr]; dup {
			t.Errorf("field %s twice", f.Abbr)
		}
		if f.Label == "" || !strings.HasPrefix(f.Abbr, "homa.") {
			t.Errorf("field %+v: want a label and a homa. name", f)
		}
		byAbbr[f.Abbr] = f
	}
	for _, v := range versions {
		for _, typ := range wire.AllTypes {
			for _, l := range wire.Layout(typ, v) {
				names := []string{l.Name}
				if l.Elem != nil {
					names = nil
					for _, m := range l.Elem {
						names = append(names, l.Name+"."+m.Name)
					}
				}
				for _, n := range names {
					if _, ok := byAbbr[Abbr(typ, n)]; !ok {
						t.Errorf("%v %v field %s: no dissector field %s", v, typ, n, Abbr(typ, n))
					}
				}
			}
		}
	}
	for abbr, kind := range map[string]string{
		"homa.type": "uint8", "homa.sender_id": "uint64", "homa.sport": "uint16", "homa.common.ack": "bytes",
		"homa.data.seg.offset": "uint32", "homa.data.ack.client_port": "uint16", "homa.data.pad": "bytes",
		"homa.grant.offset": "uint32", "homa.grant.resend_all": "uint8", "homa.resend.priority": "uint8",
		"homa.cutoffs.unsched_cutoffs": "uint32", "homa.ack.num_acks": "uint16", "homa.ack.acks.client_id": "uint64",
		"homa.data.offset": "uint32", "homa.rpc_id": "uint64", "homa.priority": "uint8",
	} {
		if f, ok := byAbbr[abbr]; !ok || f.Kind != kind {
			t.Errorf("field %s: got %+v, want kind %s", abbr, f, kind)
		}
	}
}

func TestInstall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins")
	path, err := Install(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	var want bytes.Buffer
	Generate(&want)
	if path != filepath.Join(dir, FileName) || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("Install wrote %s (%d bytes), want %s with the generated dissector", path, len(got), filepath.Join(dir, FileName))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if _, err := Install("/proc/no-such/dir"); err == nil || !strings.Contains(err.Error(), "cannot create") {
		t.Errorf("Install into /proc: got %v, want a cannot-create error", err)
	}
	t.Setenv("HOME", "/home/someone")
	if d, err := PluginDir(); err != nil || d != "/home/someone/.local/lib/wireshark/plugins" {
		t.Errorf("PluginDir: got %q, %v", d, err)
	}
}
