package conformance

import (
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// TestPlainFailure: Gomega's assertion messages become one line with the
// spec's description and the values, without Gomega's type annotations,
// truncation notes or link; other messages are kept as they are.
func TestPlainFailure(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"requests executed by the server (at most once each)\nExpected\n    <uint64>: 3\nto equal\n    <uint64>: 4",
			"requests executed by the server (at most once each): expected 3 to equal 4"},
		{"Expected\n    <string>: payload: header carries call id 0, want 5\nto be empty",
			"expected payload: header carries call id 0, want 5 to be empty"},
		{"RPCs issued\nExpected\n    <[]string | len:2, cap:2>: [\"a\", \"b\"]\n\nGomega truncated this representation as it exceeds 'format.MaxLength'.\n" +
			"Consider having the object provide a custom 'GomegaStringer' representation\nor adjust the parameters in Gomega's 'format' package.\n\n" +
			"Learn more here: https://onsi.github.io/gomega/#adjusting-output\nto be empty",
			`RPCs issued: expected ["a", "b"] to be empty`},
		{"no GRANT from 198.18.0.1 within 30ms", "no GRANT from 198.18.0.1 within 30ms"},
		{"spec checker findings:\nHOMA-ID-003 frame 1: x\nHOMA-ID-003 frame 2: y", "spec checker findings:\nHOMA-ID-003 frame 1: x\nHOMA-ID-003 frame 2: y"},
	} {
		if got := PlainFailure(c.in); got != c.want {
			t.Errorf("PlainFailure(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestCaptureComment: a failed spec's capture says it failed and why; an
// interrupted one's that it was interrupted (it said "failed: Interrupted
// by User").
func TestCaptureComment(t *testing.T) {
	for _, c := range []struct {
		state types.SpecState
		msg   string
		want  string
	}{
		{types.SpecStateFailed, "no GRANT from 198.18.0.1 within 30ms\nmore", "homatest run: GRANT-x failed: no GRANT from 198.18.0.1 within 30ms"},
		{types.SpecStateInterrupted, "Interrupted by User", "homatest run: GRANT-x interrupted before it finished (Interrupted by User)"},
	} {
		rep := types.SpecReport{LeafNodeText: "GRANT-x", State: c.state, Failure: types.Failure{Message: c.msg}}
		if got := captureComment(rep); got != c.want {
			t.Errorf("%v: %q, want %q", c.state, got, c.want)
		}
	}
}
