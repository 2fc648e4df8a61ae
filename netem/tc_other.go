//go:build !linux

package netem

import "github.com/vishvananda/netns"

// ProbeKernel returns ErrNotSupported: kernel qdiscs are Linux only.
func ProbeKernel() (KernelFeatures, error) { return KernelFeatures{}, ErrNotSupported }

// Detect returns ErrNotSupported: kernel qdiscs are Linux only.
func Detect(cfg LinkConfig) ([]string, error) { return nil, ErrNotSupported }

// ApplyTC returns ErrNotSupported.
func ApplyTC(ns netns.NsHandle, dev string, cfg LinkConfig) error { return ErrNotSupported }

// ResetTC returns ErrNotSupported.
func ResetTC(ns netns.NsHandle, dev string) error { return ErrNotSupported }

// ShowTC returns ErrNotSupported.
func ShowTC(ns netns.NsHandle, dev string) (*TCState, error) { return nil, ErrNotSupported }

// ApplyTCPlan returns ErrNotSupported.
func ApplyTCPlan(ns netns.NsHandle, dev string, p *Plan) error { return ErrNotSupported }

// DetectPlan returns ErrNotSupported: the tc backend's plans are nftables rules.
func DetectPlan(p *Plan, dev string) ([]string, error) { return nil, ErrNotSupported }

// RemoveTCPlan returns ErrNotSupported.
func RemoveTCPlan(ns netns.NsHandle, dev string) error { return ErrNotSupported }

// TCPlanHits returns ErrNotSupported.
func TCPlanHits(ns netns.NsHandle, dev string) ([]PlanRuleHits, error) { return nil, ErrNotSupported }
