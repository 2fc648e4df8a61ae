package plural

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 specs"}, {1, "1 spec"}, {2, "2 specs"}, {-1, "-1 specs"}} {
		if got := Of(c.n, "spec", "specs"); got != c.want {
			t.Errorf("Of(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := Of64(1, "frame", "frames"); got != "1 frame" {
		t.Errorf("Of64(1) = %q", got)
	}
	if got := Of64(7, "frame", "frames"); got != "7 frames" {
		t.Errorf("Of64(7) = %q", got)
	}
}

func TestWord(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "them"}, {1, "it"}, {2, "them"}} {
		if got := Word(c.n, "it", "them"); got != c.want {
			t.Errorf("Word(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
