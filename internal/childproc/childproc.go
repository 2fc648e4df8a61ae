// Package childproc starts child processes that die with this one: a
// killed homatest must not leave a VM, or a conformance pass working on a
// run folder the next run takes over.
package childproc
