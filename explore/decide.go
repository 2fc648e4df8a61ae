package explore

import (
	"math/rand/v2"
)

// decider makes the legal-peer model's decisions: the case's fixed
// Choices first; for any other decision point, a random non-default
// option with the kind's probability (generation), or the default
// (replay, when rng is nil). It records every non-default decision it
// made, so that the run's case replays exactly.
type decider struct {
	fixed map[Key]int
	rng   *rand.Rand
	prob  [numKinds]float64
	made  map[Key]int
	// used counts the non-default decisions per kind (the search rewards
	// kinds whose cases found something new).
	used [numKinds]int
}

// newDecider returns a decider that replays choices and, when rng is
// set, draws the other decisions with probabilities prob.
func newDecider(choices []Choice, rng *rand.Rand, prob [numKinds]float64) *decider {
	d := &decider{fixed: make(map[Key]int, len(choices)), rng: rng, prob: prob, made: map[Key]int{}}
	for _, c := range choices {
		d.fixed[c.Key] = c.Value
	}
	return d
}

// choose decides key k among the options allowed (bit v set: option v
// allowed; option 0, the default, always is) and returns the option.
func (d *decider) choose(k Key, allowed uint32) int {
	allowed |= 1
	if v, ok := d.fixed[k]; ok {
		if v > 0 && v < 32 && allowed&(1<<v) != 0 {
			d.take(k, v)
			return v
		}
		return 0
	}
	if d.rng == nil || d.prob[k.Kind] == 0 || d.rng.Float64() >= d.prob[k.Kind] {
		return 0
	}
	var opts [32]int
	n := 0
	for v := 1; v < k.Kind.options() && v < 32; v++ {
		if allowed&(1<<v) != 0 {
			opts[n] = v
			n++
		}
	}
	if n == 0 {
		return 0
	}
	v := opts[d.rng.IntN(n)]
	d.take(k, v)
	return v
}

func (d *decider) take(k Key, v int) {
	d.made[k] = v
	d.used[k.Kind]++
}

// all is the allowed mask with every option of kind k.
func all(k Kind) uint32 { return 1<<k.options() - 1 }

// choices returns the decisions made, sorted by key.
func (d *decider) choices() []Choice {
	out := make([]Choice, 0, len(d.made))
	for k, v := range d.made {
		out = append(out, Choice{Key: k, Value: v})
	}
	c := Case{Choices: out}
	c.sortChoices()
	return c.Choices
}
