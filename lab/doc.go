// Package lab boots a Linux kernel in QEMU with a small initramfs (busybox,
// the homatest binary, the kernel modules the testbed needs and any the
// user adds, such as homa.ko), shares the host's working folder with the
// guest over 9p at the same path, runs one command there and returns its
// output and exit code. It is how homatest meets kernels this machine does
// not run: a stock Debian kernel with sch_netem and sch_prio for the tc
// backend, or a kernel with HomaModule loaded for `homatest run --impl
// linux`.
//
// The default kernel is Debian's stock linux-image package DefaultPackage,
// fetched with `apt-get download` and unpacked with `dpkg-deb -x` into a
// cache folder (Fetch). The initramfs is written with u-root's pkg/cpio
// (newc format); module dependencies come from each module's .modinfo
// section (a Debian package ships no modules.dep), and compressed modules
// (.ko.xz, .ko.gz) are decompressed for busybox insmod.
//
// QEMU uses KVM when /dev/kvm can be opened and KVM runs the guest (a
// nested KVM may not: see vmAttempts), software emulation (TCG,
// multi-threaded) otherwise; a boot then takes 12-60 s. QEMU runs as a child
// that dies with this process (Pdeathsig) and carries a harness run id in
// its -name, so `homatest cleanup` also stops a VM whose homatest was
// killed.
package lab
