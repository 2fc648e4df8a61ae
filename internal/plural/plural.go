// Package plural renders counts with their noun in the right number, the
// one way homatest's messages say "1 spec" and "2 specs".
package plural

import "strconv"

// Of returns n followed by one when n is 1 and by many otherwise:
// Of(1, "spec", "specs") is "1 spec", Of(0, "spec", "specs") "0 specs".
func Of(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Of64 is Of for an unsigned count (packets, bytes, frames).
func Of64(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatUint(n, 10) + " " + many
}

// Word returns one when n is 1 and many otherwise, without the count: the
// verb or pronoun that agrees with a count said elsewhere
// (Word(1, "was", "were") is "was").
func Word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
