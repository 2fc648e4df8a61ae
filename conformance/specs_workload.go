package conformance

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/spec"
)

// The rules a lossy workload exercises most (every MUST rule is checked).
var lossRules = []string{"HOMA-RESEND-001", "HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-007",
	"HOMA-RESEND-010", "HOMA-UNSCHED-001", "HOMA-GRANT-005", "HOMA-ACK-004"}

// The rules many long messages at once exercise most.
var incastRules = []string{"HOMA-GRANT-002", "HOMA-GRANT-003", "HOMA-GRANT-005", "HOMA-GRANT-008", "HOMA-GRANT-009"}

// randomLoss and bursts are netem loss models: each frame lost with
// probability p; bursts of mean length burst frames, one burst every
// every frames on average (Gilbert-Elliott, as Linux netem's gemodel).
func randomLoss(p float64) netem.LossConfig {
	return netem.LossConfig{Model: "random", Probability: p}
}
func bursts(every, burst int) netem.LossConfig {
	return netem.LossConfig{Model: "gilbert-elliott", P: 1 / float64(every), R: 1 / float64(burst), LossBad: 1}
}

// altered sums a per-port counter of the bench's switch.
func altered(b *Bench, f func(netem.PortStats) uint64) uint64 {
	var n uint64
	for _, p := range b.Switch().Ports {
		n += f(p)
	}
	return n
}

var _ = Describe("workloads", func() {
	It("WORKLOAD-random-loss: W3 requests from two clients over links losing 5% of packets all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", lossRules...), body(func() {
			b := workloadSpec{hosts: 3, dist: "w3", rpcs: 150, concurrency: 12,
				imp: LinkImpairment{Link: netem.LinkConfig{Loss: randomLoss(0.05)}, Seed: 7}, seed: 1}.run()
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-burst-loss: W3 requests over links losing bursts of 10 packets all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", lossRules...), body(func() {
			b := workloadSpec{hosts: 3, dist: "w3", rpcs: 150, concurrency: 12,
				imp: LinkImpairment{Link: netem.LinkConfig{Loss: bursts(300, 10)}, Seed: 8}, seed: 2}.run()
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-incast: 200 KB requests from three clients to one server all complete and the capture keeps every MUST rule",
		labels("workload", "MUST", "HOMA-GRANT-002", "HOMA-GRANT-003", "HOMA-GRANT-005", "HOMA-GRANT-009"), body(func() {
			b := workloadSpec{hosts: 4, dist: "200000", rpcs: 30, concurrency: 6, seed: 3}.run()
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-reorder: W3 requests over links that hold one packet in ten back behind three later ones all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", append([]string{"HOMA-GRANT-003", "HOMA-RESEND-011", "HOMA-WIRE-003"}, lossRules...)...), body(func() {
			link := netem.LinkConfig{Reorder: netem.ReorderConfig{Probability: 0.1, Gap: 3, MaxHold: 2 * time.Millisecond}}
			b := workloadSpec{hosts: 3, dist: "w3", rpcs: 150, concurrency: 12,
				imp: LinkImpairment{Link: link, Seed: 9}, seed: 4}.run()
			Expect(altered(b, func(p netem.PortStats) uint64 { return p.Reordered })).To(BeNumerically(">", 0), "packets the switch reordered")
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-jitter-duplicate: W2 requests over links with 200±200 µs of delay that also duplicate 2% of packets all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", append([]string{"HOMA-GRANT-003", "HOMA-ACK-003"}, lossRules...)...), body(func() {
			link := netem.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 200 * time.Microsecond, Duplicate: 0.02}
			b := workloadSpec{hosts: 3, dist: "w2", rpcs: 300, concurrency: 16,
				imp: LinkImpairment{Link: link, Seed: 10}, seed: 5}.run()
			Expect(altered(b, func(p netem.PortStats) uint64 { return p.Duplicated })).To(BeNumerically(">", 0), "packets the switch duplicated")
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-w1-concurrent: 600 W1 (tiny) requests from three clients, 48 outstanding at once, over links losing 1% of packets all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", append([]string{"HOMA-ID-001", "HOMA-RESEND-006"}, lossRules...)...), body(func() {
			b := workloadSpec{hosts: 4, dist: "w1", rpcs: 600, concurrency: 48,
				imp: LinkImpairment{Link: netem.LinkConfig{Loss: randomLoss(0.01)}, Seed: 11}, seed: 6}.run()
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-w4: W4 requests and responses (capped at 250 KB) over links losing 1% of packets all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", append(incastRules, lossRules...)...), body(func() {
			b := workloadSpec{hosts: 3, dist: "w4", maxLen: 250000, rpcs: 60, concurrency: 8,
				imp: LinkImpairment{Link: netem.LinkConfig{Loss: randomLoss(0.01)}, Seed: 12}, seed: 7}.run()
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-w5: W5 requests and responses (capped at 400 KB) over links losing bursts of 5 packets all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", append(incastRules, lossRules...)...), body(func() {
			b := workloadSpec{hosts: 3, dist: "w5", maxLen: 400000, rpcs: 30, concurrency: 6,
				imp: LinkImpairment{Link: netem.LinkConfig{Loss: bursts(1000, 5)}, Seed: 13}, seed: 8}.run()
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-incast-mixed: W4 requests (capped at 300 KB) from four clients to one server, 16 outstanding at once, all complete and the capture keeps every MUST rule",
		labels("workload", "MUST", append([]string{"HOMA-GRANT-007"}, incastRules...)...), body(func() {
			b := workloadSpec{hosts: 5, dist: "w4", maxLen: 300000, rpcs: 60, concurrency: 16, seed: 9}.run()
			checkBench(b, spec.Must)
		}))
})
