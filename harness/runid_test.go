package harness

import (
	"testing"
)

func TestRunIDNames(t *testing.T) {
	id := RunID("3f9a1c")
	if !id.Valid() {
		t.Fatal("3f9a1c not valid")
	}
	for _, c := range []struct{ got, want string }{
		{id.SwitchNS(), "ht3f9a1c-sw"}, {id.HostNS(1), "ht3f9a1c-h1"}, {id.HostIf(64), "ht3f9a1c-h64"},
		{id.PortIf(7), "ht3f9a1c-p7"}, {id.BridgeIf(), "ht3f9a1c-br"}, {id.Prefix(), "ht3f9a1c"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// Interface names fit IFNAMSIZ-1 = 15 bytes for every host.
	for i := 1; i <= MaxHosts; i++ {
		for _, n := range []string{id.HostIf(i), id.PortIf(i), id.BridgeIf()} {
			if len(n) > 15 {
				t.Errorf("%q is %d bytes, over 15", n, len(n))
			}
		}
	}
	for _, bad := range []RunID{"", "3F9A1C", "3f9a1", "3f9a1c0", "xyzxyz"} {
		if bad.Valid() {
			t.Errorf("%q valid", bad)
		}
	}
	for _, c := range []struct {
		name string
		id   RunID
		ok   bool
	}{{"ht3f9a1c-h1", "3f9a1c", true}, {"ht3f9a1c-sw", "3f9a1c", true}, {"ht-a-17990-7610", "", false},
		{"ht3f9a1c", "", false}, {"eth0", "", false}, {"ht3F9a1c-h1", "", false}} {
		if id, ok := RunOf(c.name); id != c.id || ok != c.ok {
			t.Errorf("RunOf(%q) = %q, %v; want %q, %v", c.name, id, ok, c.id, c.ok)
		}
	}
}

// TestReserveRunID: reserved ids are unique and locked; a forced id that
// is in use is refused; release frees it.
func TestReserveRunID(t *testing.T) {
	old := LockDir
	LockDir = t.TempDir()
	defer func() { LockDir = old }()
	seen := map[RunID]bool{}
	var locks []*runLock
	defer func() {
		for _, l := range locks {
			l.release()
		}
	}()
	for i := 0; i < 50; i++ {
		l, err := reserveRunID("")
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, l)
		if !l.id.Valid() || seen[l.id] {
			t.Fatalf("id %q invalid or repeated", l.id)
		}
		seen[l.id] = true
		if !runIsLive(l.id) {
			t.Fatalf("run %s not live while locked", l.id)
		}
	}
	if _, err := reserveRunID(locks[0].id); err == nil {
		t.Fatalf("reserving the live id %s succeeded", locks[0].id)
	}
	if _, err := reserveRunID("NOTHEX"); err == nil {
		t.Fatal("reserving a bad id succeeded")
	}
	locks[0].release()
	if runIsLive(locks[0].id) {
		t.Fatal("released run still live")
	}
	l, err := reserveRunID(locks[0].id)
	if err != nil {
		t.Fatalf("reserve released id: %v", err)
	}
	l.release()
	l.release() // idempotent
}
