package netem

import (
	"errors"

	"github.com/vishvananda/netns"
)

// SetTC emulates cfg on the egress of interface dev in namespace ns with
// kernel qdiscs (ApplyTC) and then, when plan is not nil, applies the
// fault plan as nftables rules (ApplyTCPlan); with a nil plan it removes
// any plan an earlier SetTC left, so that dev has what this call says
// and nothing else (RemoveTCPlan). A plan that fails to apply
// resets dev (ResetTC), so a failed SetTC leaves nothing half-set. Check
// first with Detect and DetectPlan to report every missing feature at
// once.
func SetTC(ns netns.NsHandle, dev string, cfg LinkConfig, plan *Plan) error {
	if err := ApplyTC(ns, dev, cfg); err != nil {
		return err
	}
	if plan == nil {
		return RemoveTCPlan(ns, dev)
	}
	if err := ApplyTCPlan(ns, dev, plan); err != nil {
		return errors.Join(err, ResetTC(ns, dev))
	}
	return nil
}
