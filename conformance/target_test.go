package conformance

import (
	"reflect"
	"testing"
)

func TestUnclaimed(t *testing.T) {
	info := TargetInfo{Capabilities: []string{"ipv4", "grants", "need-ack"}}
	got := unclaimed([]string{"ipv4", "ipv6", "grants", "cutoffs"}, info)
	if want := []string{"ipv6", "cutoffs"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unclaimed = %v, want %v", got, want)
	}
	if got := unclaimed([]string{"grants"}, info); got != nil {
		t.Errorf("unclaimed = %v, want none", got)
	}
}
